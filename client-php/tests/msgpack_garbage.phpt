--TEST--
Mdcached\Client: a msgpack record cut inside a map after a nil key (msgpack-php corrupts PHP's heap on it) is a payload failure, not a crash
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$c = mdc_client();
check(extension_loaded('msgpack'), 'msgpack loaded by the runner');
$c->flush();
// flags 6 is msgpack.  'full' is the record robust.phpt's random bytes
// made when PHP crashed, 'prefix' the part of it that still crashes,
// 'min' the smallest case: map of 2, {nil: {-2: -5}}, then nothing
$bad = [
    'full' => '9759d03ede4374b04be54cdf167f16f2d5dd5bd2250a3339b65400b91d3e4930224895c924668adfcd0b6dda5d1ca4113f726252d7d8ed42bf02c13f2683f656c081fefbc6063a901957eb003aa862b0621fe9de8d5c79b0cc56099ec9a746485bac7689163ff2d753341e665f91ebd991b0aa18d3fffa2cb6c5344dfaf3b4e1cfab2339c251a7017c96b629a96623a0224d4c7ff78c6ec17afb17980992827fc621b4cbd55e2507a7e6494742b7d9a943c8cec9be37d9d29a9207f36020d2cab218a46ffea99bd0c88c7345f63bc175f27d2f5dd6248db34bfabf88d2ae54760cdc5e983518c92974af3ad36f5cec43bbbe74342704e08ac35192cbe88a983d3959f5bc525a93f6eed19160c824ae6da6608db28931d581d096b749de4034fa274d1271beda112aa408f7e5',
    'prefix' => '9759d03ede4374b04be54cdf167f16f2d5dd5bd2250a3339b65400b91d3e4930224895c924668adfcd0b6dda5d1ca4113f726252d7d8ed42bf02c13f2683f656c081fefb',
    'min' => '82c081fefb',
    'min3' => '83f656c081fefb00',
    'trail' => '81c081fefbc0',  // a whole map, then a byte more
    'trunc' => 'dc0003c0c0',    // array16 of 3 with 2 elements
    'str' => 'd9ff6162',        // str8 of 255 with 2 bytes
    // whole values that crash msgpack-php too: nil keys where its packer
    // never writes them (a map as a key, {nil: fixext}, ...)
    'nilkeys' => '8383c084ff80c080c080c084c0d064c0e9c0c202d0d8c083c0d018c0f284c001c0d4a97cc0cb702ef26f0a17bdd1c001e7c0e283c093d09f078400e7c0c0c0a3889939a466b61051acff3e5bb259c19fe183759c75c08294f6c7015474a4b10f06860683c0a982a487c591e1b505a8c701365503cb23d6cff3880cf01dcb1f1cd9c383b3bd9ec081c0a31b689ec007c007d08f81c0c0',
    // an ArrayObject, then {nil: 4, 0: 3}: a back reference to its
    // __serialize data, which msgpack-php freed
    'serref' => '9482c0ab41727261794f626a656374c09400910190c082c004000382c001a1780182c0020007',
];
// well-formed msgpack written by other clients still decodes
$good = [
    'arr' => msgpack_pack(['a' => [1, 2, 3], 'b' => null, 'c' => 1.5, 'd' => "\xff"]),
    'obj' => msgpack_pack([new ArrayObject([1]), (object)['x' => [true]]]),
];
$s = fsockopen(getenv('MDC_TEST_HOST'), (int)getenv('MDC_TEST_PORT'));
foreach ($bad + array_map('bin2hex', $good) as $k => $hex) {
    $d = hex2bin($hex);
    fwrite($s, "set $k 6 0 " . strlen($d) . "\r\n$d\r\n");
    check(trim(fgets($s)) === 'STORED', "$k stored");
}
fclose($s);
// the heap corruption shows at a later allocation: make many
function churn(): void
{
    $b = [];
    for ($j = 0; $j < 20000; $j++) {
        $a = [];
        for ($k = 0; $k < $j % 20; $k++) {
            $a[] = [$k, "x$k"];
        }
        $b[$j % 100] = $a;
    }
}
foreach (array_keys($bad) as $k) {
    for ($i = 0; $i < 3; $i++) {
        check($c->get($k) === false && $c->getResultCode() === Client::RES_PAYLOAD_FAILURE,
              "$k: payload failure (" . $c->getResultCode() . ')');
        check($c->get($k, null, Client::GET_EXTENDED) === false, "$k extended");
        churn();
    }
}
check($c->getMulti(array_keys($bad)) === [], 'getMulti skips them');
churn();
check($c->get('arr') === ['a' => [1, 2, 3], 'b' => null, 'c' => 1.5, 'd' => "\xff"], 'array decodes');
$o = $c->get('obj');
check($o[0] instanceof ArrayObject && $o[0][0] === 1 && $o[1]->x === [true], 'objects decode');
$c->setOption(Client::OPT_SERIALIZER, Client::SERIALIZER_MSGPACK);
$v = ['n' => new ArrayObject(['k' => 'v']), 'l' => range(1, 40), 'm' => [[]]];
check($c->set('own', $v) && $c->get('own') == $v, 'own msgpack value round trip');
// shared and recursive objects and references still decode as shared
class W { public $p = 1; public $q; }
$o = new W;
$o->q = [1]; // not $o: msgpack-php leaks a self-referencing object
$a = ['x' => 1];
$r = $c->set('shared', [$o, $o, &$a, &$a, new ArrayObject([2])]) ? $c->get('shared') : null;
check(is_array($r) && $r[0] === $r[1] && $r[0]->q === [1], 'shared objects: ' . $c->getResultMessage());
if (is_array($r)) {
    $r[2]['x'] = 5;
    check($r[3]['x'] === 5 && $r[4][0] === 2, 'references');
}
echo "done\n";
?>
--EXPECT--
done
