--TEST--
Mdcached\Client: records (get/set/add/replace/cas/append/prepend/delete/multi/counters/touch/read-through/prefix)
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$c = mdc_client();
$c->flush();

check($c->set('k1', 'v1') && $c->get('k1') === 'v1', 'set/get');
check($c->get('nope') === false && $c->getResultCode() === Client::RES_NOTFOUND, 'miss');
check(!$c->add('k1', 'x') && $c->getResultCode() === Client::RES_DATA_EXISTS, 'add existing');
check($c->add('k2', 'x') && $c->get('k2') === 'x', 'add new');
check(!$c->replace('k3', 'x') && $c->getResultCode() === Client::RES_NOTSTORED, 'replace missing');
check($c->replace('k2', 'y') && $c->get('k2') === 'y', 'replace');
check($c->append('k1', '+a') && $c->prepend('k1', 'p+') && $c->get('k1') === 'p+v1+a', 'append/prepend');
check(!$c->append('k9', 'x') && $c->getResultCode() === Client::RES_NOTSTORED, 'append missing');

// cas
$e = $c->get('k1', null, Client::GET_EXTENDED);
check(is_array($e) && $e['value'] === 'p+v1+a' && $e['cas'] > 0, 'GET_EXTENDED');
check($c->cas($e['cas'], 'k1', 'new') && $c->get('k1') === 'new', 'cas ok');
check(!$c->cas($e['cas'], 'k1', 'stale') && $c->getResultCode() === Client::RES_DATA_EXISTS, 'stale cas');
check(!$c->cas('bogus', 'k1', 'x') && $c->getResultCode() === Client::RES_INVALID_ARGUMENTS, 'bad cas token');
check($c->get('k1') === 'new', 'stale cas stored nothing');

// delete
check($c->delete('k2') && $c->get('k2') === false, 'delete');
check(!$c->delete('k2') && $c->getResultCode() === Client::RES_NOTFOUND, 'delete missing');
$c->set('d1', 1); $c->set('d2', 2);
$r = $c->deleteMulti(['d1', 'd2', 'd3']);
check($r === ['d1' => true, 'd2' => true, 'd3' => Client::RES_NOTFOUND], 'deleteMulti ' . json_encode($r));

// multi
check($c->setMulti(['m1' => 'a', 'm2' => [1, 2], 'm3' => 3, 42 => 'int key'], 100), 'setMulti');
$m = $c->getMulti(['m1', 'm2', 'mX', 'm3', '42']);
check($m === ['m1' => 'a', 'm2' => [1, 2], 'm3' => 3, 42 => 'int key'], 'getMulti ' . json_encode($m));
$m = $c->getMulti(['m1'], Client::GET_EXTENDED);
check($m['m1']['value'] === 'a' && $m['m1']['cas'] > 0, 'getMulti extended');
check($c->getMulti([]) === [], 'getMulti empty');
check($c->getMulti(['ok', '']) === false && $c->getResultCode() === Client::RES_BAD_KEY_PROVIDED, 'getMulti bad key');

// counters
check($c->set('n', 10) && $c->increment('n') === 11 && $c->increment('n', 5) === 16, 'increment');
check($c->decrement('n', 20) === 0, 'decrement stops at 0');
check($c->get('n') === 0, 'counter reads as int');
check($c->increment('nn') === false && $c->getResultCode() === Client::RES_NOTFOUND, 'increment missing');
check($c->increment('nn', 1, 7, 100) === 7 && $c->increment('nn', 1, 7) === 8, 'increment initial');
check($c->decrement('nd', 1, 3) === 3 && $c->decrement('nd') === 2, 'decrement initial');
$c->set('s', 'text');
check($c->increment('s') === false && $c->getResultCode() === Client::RES_NOT_NUMBER, 'increment non-number');
check($c->increment('n', -1) === false, 'negative offset');

// ttl and touch
check($c->set('t', 'v', 1) && $c->touch('t', 100), 'touch');
$e = $c->get('t', null, Client::GET_EXTENDED);
check($e['value'] === 'v', 'touched alive');
check($c->set('t2', 'v', -1) && $c->get('t2') === false, 'negative ttl: expired');
check(!$c->touch('nope', 10) && $c->getResultCode() === Client::RES_NOTFOUND, 'touch missing');

// read-through callback
$calls = 0;
$cb = function (Client $cl, string $key, &$value) use (&$calls) { $calls++; $value = "made:$key"; return true; };
check($c->get('rt', $cb) === 'made:rt' && $calls === 1, 'read-through');
check($c->get('rt', $cb) === 'made:rt' && $calls === 1, 'read-through stored');
$no = function ($cl, $key, &$value) { return false; };
check($c->get('rt2', $no) === false && $c->getResultCode() === Client::RES_NOTFOUND, 'read-through declined');
try {
    $c->get('rt3', function () { throw new LogicException('cb'); });
    check(false, 'callback exception');
} catch (LogicException $e) {
    check($e->getMessage() === 'cb', 'callback exception propagates');
}

// prefix
$p = mdc_client();
$p->setOption(Client::OPT_PREFIX, 'app1:');
check($p->set('x', 'prefixed') && $c->get('app1:x') === 'prefixed' && $p->get('x') === 'prefixed', 'prefix');
check($p->getMulti(['x']) === ['x' => 'prefixed'], 'prefix getMulti');

// binary-safe keys and values
$bk = "a\0b\xff c";
check($c->set($bk, "v\0\xff") && $c->get($bk) === "v\0\xff", 'binary key/value');
check($c->set('empty', '') && $c->get('empty') === '', 'empty value');
echo "done\n";
?>
--EXPECT--
done
