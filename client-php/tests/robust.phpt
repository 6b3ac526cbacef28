--TEST--
Mdcached\Client: records written by other clients with arbitrary flags and bytes never crash a read; odd arguments get clear codes
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$c = mdc_client();
$c->flush();
// raw memcached text protocol on the same port: any flags, any bytes
$s = fsockopen(getenv('MDC_TEST_HOST'), (int)getenv('MDC_TEST_PORT'));
mt_srand(42);
$keys = [];
$lens = [0, 1, 3, 4, 5, 8, 17, 64, 300];
for ($i = 0; $i < 600; $i++) {
    $flags = [mt_rand(0, 0xff), mt_rand(0, 0xffffffff), 0x10 | mt_rand(0, 7), 0x20 | mt_rand(0, 7), 0x30, mt_rand(0, 7)][$i % 6];
    $len = $lens[mt_rand(0, count($lens) - 1)];
    $data = $len ? random_bytes($len) : "";
    if ($i % 5 === 0 && $len >= 4) {  // a claimed length, then garbage: huge or small
        $data = pack('V', [0xffffffff, 1 << 27, 3, 0][mt_rand(0, 3)]) . substr($data, 4);
    }
    if ($i % 7 === 0) {               // almost-valid serialized data
        $data = substr(serialize(['a' => [1, 2, 3], 'o' => new ArrayObject([1])]), 0, mt_rand(1, 40));
    }
    fwrite($s, "set raw$i $flags 0 " . strlen($data) . "\r\n$data\r\n");
    $r = fgets($s);
    if (trim($r) !== 'STORED') {
        echo "raw set $i: $r";
    }
    $keys[] = "raw$i";
}
fclose($s);
$errors = 0;
foreach ($keys as $k) {
    $v = $c->get($k);
    if ($v === false && $c->getResultCode() !== Client::RES_SUCCESS) {
        check($c->getResultCode() === Client::RES_PAYLOAD_FAILURE, "$k: code " . $c->getResultCode());
        $errors++;
    }
    $c->get($k, null, Client::GET_EXTENDED);
}
check($errors > 100, "most garbage records are payload failures ($errors)");
$m = $c->getMulti($keys);
check(is_array($m) && count($m) === 600 - $errors, 'getMulti returns the decodable ones');
// tag them all through append-free paths: set raw bytes again with tags via the extension, then corrupt
$c->setOption(Client::OPT_COMPRESSION, false);
check($c->increment('raw1', 1) !== null, 'counter ops on garbage: a code');
// odd arguments
check($c->getByTag(-1, [PHP_INT_MAX]) === false && $c->getResultCode() === Client::RES_BAD_TAG, 'huge tval');
check($c->getByTag(0, []) === false, 'no tvals');
check($c->setMulti(['' => 1]) === false && $c->getResultCode() === Client::RES_BAD_KEY_PROVIDED, 'empty key in setMulti');
check($c->deleteMulti(['', 'x']) === ['' => Client::RES_BAD_KEY_PROVIDED, 'x' => Client::RES_NOTFOUND], 'deleteMulti bad key');
check($c->touch('', 1) === false && $c->cmpSet('', 1, 2) === false && $c->tagPush('', 1) === false, 'empty keys and tags');
check($c->setOption(Client::OPT_PREFIX, str_repeat('p', 200)) === false, 'long prefix');
check($c->setOptions(['x' => 1]) === false, 'string option key');
check($c->addServers([['h']]) === true && $c->addServers(['nope']) === false, 'addServers shapes');
$c->resetServerList();
$c->addServer(getenv('MDC_TEST_HOST'), (int)getenv('MDC_TEST_PORT'));
$deep = [];
$p = &$deep;
for ($i = 0; $i < 200; $i++) { $p['x'] = []; $p = &$p['x']; }
unset($p);
check($c->set('deep', $deep) && $c->get('deep') == $deep, 'deep array');
$big = array_fill(0, 20000, 'v');
check($c->set('bigarr', $big) && count($c->get('bigarr')) === 20000, 'large array');
echo "done\n";
?>
--EXPECT--
done
