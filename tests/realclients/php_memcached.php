<?php
/* tests/realclients/php_memcached.php - PHP's php-memcached extension (on
 * libmemcached, text protocol) against a running mdcached; every result
 * asserted.  Run by tests/rc_php.sh:  php php_memcached.php PORT
 * Exit 0 when every check passes, 1 otherwise, 77 without the extension. */

if (!extension_loaded('memcached')) {
    echo "SKIP: the memcached extension is not loaded\n";
    exit(77);
}
if ($argc != 2) {
    fwrite(STDERR, "usage: php php_memcached.php PORT\n");
    exit(2);
}
$port = (int)$argv[1];
$oks = 0;
$fails = 0;

function check($what, $cond, $detail = '')
{
    global $oks, $fails;
    if ($cond) {
        $oks++;
        echo "ok: $what\n";
    } else {
        $fails++;
        echo "FAIL: $what" . ($detail !== '' ? ": $detail" : '') . "\n";
    }
}

/* same(WHAT, EXPECTED, ACTUAL[, client]): strict equality, shows the
 * client's last result message on mismatch */
function same($what, $want, $got, $m = null)
{
    $msg = var_export($got, true) . ' (want ' . var_export($want, true) . ')';
    if ($m !== null && $want !== $got)
        $msg .= ' result: ' . $m->getResultCode() . ' ' . $m->getResultMessage();
    check($what, $want === $got, $msg);
}

function client($port, $binary = false)
{
    $m = new Memcached();
    $m->setOption(Memcached::OPT_CONNECT_TIMEOUT, 2000);      /* ms */
    $m->setOption(Memcached::OPT_POLL_TIMEOUT, 2000);         /* ms */
    $m->setOption(Memcached::OPT_RECV_TIMEOUT, 2000000);      /* us */
    $m->setOption(Memcached::OPT_SEND_TIMEOUT, 2000000);      /* us */
    if ($binary)
        $m->setOption(Memcached::OPT_BINARY_PROTOCOL, true);
    $m->addServer('127.0.0.1', $port);
    return $m;
}

$m = client($port);
check('text protocol by default',
      !$m->getOption(Memcached::OPT_BINARY_PROTOCOL));

/* set / get, with PHP's types carried in the flags */
same('set string', true, $m->set('php:s', 'hello'), $m);
same('get string', 'hello', $m->get('php:s'), $m);
same('result code after get', Memcached::RES_SUCCESS, $m->getResultCode());
same('set int', true, $m->set('php:i', 12345), $m);
same('get int (type from flags)', 12345, $m->get('php:i'), $m);
same('set float', true, $m->set('php:f', 2.5), $m);
same('get float', 2.5, $m->get('php:f'), $m);
same('set bool', true, $m->set('php:b', true), $m);
same('get bool', true, $m->get('php:b'), $m);
$arr = ['a' => 1, 'list' => [1, 2, 3], 'str' => "x\r\nEND\r\n"];
same('set array (serialized)', true, $m->set('php:arr', $arr), $m);
same('get array', $arr, $m->get('php:arr'), $m);
$big = str_repeat('0123456789abcdef', 40000);              /* 640 KB */
same('set 640 KB string (compressed by the client)', true,
     $m->set('php:big', $big), $m);
same('get 640 KB string', $big, $m->get('php:big'), $m);
$m->setOption(Memcached::OPT_COMPRESSION, false);
$bin = '';
for ($i = 0; $i < 256; $i++)
    $bin .= chr($i);
$bin = str_repeat($bin, 1000);                               /* 256 KB */
same('set 256 KB binary, uncompressed', true, $m->set('php:bin', $bin), $m);
same('get 256 KB binary', $bin, $m->get('php:bin'), $m);

same('get missing', false, $m->get('php:missing'));
same('missing -> RES_NOTFOUND', Memcached::RES_NOTFOUND, $m->getResultCode());

/* add / replace / append / prepend (append needs compression off) */
same('add existing', false, $m->add('php:s', 'x'));
same('add existing -> RES_NOTSTORED', Memcached::RES_NOTSTORED,
     $m->getResultCode());
same('add new', true, $m->add('php:new', 'n1'), $m);
same('replace missing', false, $m->replace('php:none', 'x'));
same('replace existing', true, $m->replace('php:new', 'n2'), $m);
same('append', true, $m->append('php:new', '-tail'), $m);
same('prepend', true, $m->prepend('php:new', 'head-'), $m);
same('get after append/prepend', 'head-n2-tail', $m->get('php:new'), $m);

/* multi-get */
$items = ['php:m1' => 'one', 'php:m2' => 2, 'php:m3' => ['three']];
same('setMulti', true, $m->setMulti($items), $m);
$got = $m->getMulti(['php:m1', 'php:missing', 'php:m2', 'php:m3']);
if (is_array($got))
    ksort($got);
$want = $items;
ksort($want);
same('getMulti returns the stored keys only', $want, $got, $m);
same('getMulti of missing keys only', [], $m->getMulti(['php:x1', 'php:x2']),
     $m);
$got = $m->getMulti(['php:m1', 'php:missing', 'php:m2'],
                    Memcached::GET_PRESERVE_ORDER);
same('getMulti GET_PRESERVE_ORDER',
     ['php:m1' => 'one', 'php:missing' => null, 'php:m2' => 2], $got, $m);
same('getDelayed', true, $m->getDelayed(['php:m1', 'php:m2']), $m);
$rows = $m->fetchAll();
$vals = [];
if (is_array($rows))
    foreach ($rows as $r)
        $vals[$r['key']] = $r['value'];
ksort($vals);
same('fetchAll', ['php:m1' => 'one', 'php:m2' => 2], $vals, $m);

/* cas through GET_EXTENDED */
same('set for cas', true, $m->set('php:c', 'v1'), $m);
$e = $m->get('php:c', null, Memcached::GET_EXTENDED);
check('get GET_EXTENDED has value, cas, flags',
      is_array($e) && $e['value'] === 'v1' && is_int($e['cas']) && $e['cas'] != 0
      && array_key_exists('flags', $e), var_export($e, true));
$cas1 = is_array($e) ? $e['cas'] : 0;
same('cas with the current unique', true, $m->cas($cas1, 'php:c', 'v2'), $m);
same('value after cas', 'v2', $m->get('php:c'), $m);
same('cas with a stale unique', false, $m->cas($cas1, 'php:c', 'v3'));
same('stale cas -> RES_DATA_EXISTS', Memcached::RES_DATA_EXISTS,
     $m->getResultCode());
same('value unchanged after failed cas', 'v2', $m->get('php:c'), $m);
$e2 = $m->get('php:c', null, Memcached::GET_EXTENDED);
check('cas unique changed after cas',
      is_array($e2) && $e2['cas'] != $cas1, var_export($e2, true));
same('cas on a missing key', false, $m->cas($cas1, 'php:nocas', 'x'));
same('cas missing -> RES_NOTFOUND', Memcached::RES_NOTFOUND,
     $m->getResultCode());
$ext = $m->getMulti(['php:c', 'php:m1'], Memcached::GET_EXTENDED);
check('getMulti GET_EXTENDED carries cas',
      is_array($ext) && isset($ext['php:c']['cas'], $ext['php:m1']['cas'])
      && $ext['php:c']['value'] === 'v2', var_export($ext, true));

/* increment / decrement */
same('set counter', true, $m->set('php:n', 10), $m);
same('increment 5', 15, $m->increment('php:n', 5), $m);
same('increment default 1', 16, $m->increment('php:n'), $m);
same('decrement 6', 10, $m->decrement('php:n', 6), $m);
same('decrement below zero clamps', 0, $m->decrement('php:n', 100), $m);
same('get counter', 0, $m->get('php:n'), $m);
same('increment missing', false, $m->increment('php:nonum', 1));
same('increment missing -> RES_NOTFOUND', Memcached::RES_NOTFOUND,
     $m->getResultCode());
same('decrement missing', false, $m->decrement('php:nonum', 1));
$m->set('php:txt', 'abc');
same('increment non-numeric', false, $m->increment('php:txt', 1));
check('increment non-numeric is an error, not success',
      $m->getResultCode() != Memcached::RES_SUCCESS,
      $m->getResultMessage());
same('value of non-numeric key kept', 'abc', $m->get('php:txt'), $m);

/* delete */
same('delete', true, $m->delete('php:s'), $m);
same('get deleted', false, $m->get('php:s'));
same('delete again', false, $m->delete('php:s'));
same('delete again -> RES_NOTFOUND', Memcached::RES_NOTFOUND,
     $m->getResultCode());
$dm = $m->deleteMulti(['php:m1', 'php:gone']);
check('deleteMulti: one deleted, one not found',
      is_array($dm) && $dm['php:m1'] === true
      && $dm['php:gone'] === Memcached::RES_NOTFOUND, var_export($dm, true));

/* touch: to 1 s and watch it expire; a key set with 1 s touched to 100 */
same('set no-expiry key', true, $m->set('php:t', 'tt'), $m);
same('set 1 s key', true, $m->set('php:t2', 'tt', 1), $m);
same('touch to 1 s', true, $m->touch('php:t', 1), $m);
same('touch to 100 s', true, $m->touch('php:t2', 100), $m);
same('touch missing', false, $m->touch('php:tnone', 10));
same('touch missing -> RES_NOTFOUND', Memcached::RES_NOTFOUND,
     $m->getResultCode());
$start = microtime(true);
while ($m->get('php:t') !== false && microtime(true) - $start < 4)
    usleep(100000);
same('touched key expired', false, $m->get('php:t'));
usleep(1100000);
same('key touched to 100 s still there', 'tt', $m->get('php:t2'), $m);

/* server information */
$stats = $m->getStats();
$srv = "127.0.0.1:$port";
check('getStats has pid and curr_items',
      is_array($stats) && isset($stats[$srv]['pid'], $stats[$srv]['curr_items']),
      var_export($stats, true) . ' ' . $m->getResultMessage());
$ver = $m->getVersion();
check('getVersion', is_array($ver) && isset($ver[$srv])
      && preg_match('/^[1-9][0-9]*\.[0-9]+\.[0-9]+$/', $ver[$srv]),
      var_export($ver, true) . ' ' . $m->getResultMessage());

/* flush */
same('flush', true, $m->flush(), $m);
same('get after flush', false, $m->get('php:t2'));
same('getMulti after flush', [], $m->getMulti(['php:m2', 'php:c']), $m);
same('set after flush', true, $m->set('php:after', 'x'), $m);
same('get after flush+set', 'x', $m->get('php:after'), $m);

/* memcached's binary protocol (docs/protocol-binary.md): php-memcached's
 * OPT_BINARY_PROTOCOL client stores and reads through it, and the text
 * client sees the same records */
$b = client($port, true);
same('binary protocol set', true, $b->set('php:binproto', 'x'), $b);
same('binary protocol get', 'x', $b->get('php:binproto'), $b);
same('binary protocol get of a text record', 'x', $b->get('php:after'), $b);
same('binary protocol delete', true, $b->delete('php:binproto'), $b);
same('text client sees the binary delete', false, $m->get('php:binproto'));
same('binary protocol set of a number', true, $b->set('php:bn', 2), $b);
same('binary protocol increment', 3, $b->increment('php:bn'), $b);
same('text client still served', 'x', $m->get('php:after'), $m);

echo "php-memcached: $oks passed, $fails failed\n";
exit($fails ? 1 : 0);
