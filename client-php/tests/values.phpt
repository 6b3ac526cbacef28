--TEST--
Mdcached\Client: value types, serializers (php, igbinary, msgpack), zlib/zstd compression above a threshold
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$c = mdc_client();
$c->flush();

class Pt { public $x = 1; protected $y = [2]; private $z = 'z'; }
$vals = ['s' => 'str', 'i' => -42, 'big' => PHP_INT_MAX, 'f' => 3.25, 'f2' => 0.1, 't' => true,
         'F' => false, 'n' => null, 'a' => ['x' => [1, 2.5, 'y'], 7 => null], 'o' => new Pt(),
         'e' => '', 'num' => '0012'];
$sers = [Client::SERIALIZER_PHP => 'php'];
check(extension_loaded('igbinary') && extension_loaded('msgpack'), 'serializer extensions loaded by the runner');
$sers[Client::SERIALIZER_IGBINARY] = 'igbinary';
$sers[Client::SERIALIZER_MSGPACK] = 'msgpack';
foreach ($sers as $ser => $name) {
    check($c->setOption(Client::OPT_SERIALIZER, $ser), "select $name");
    foreach ($vals as $k => $v) {
        check($c->set("$name:$k", $v), "$name set $k");
        $g = $c->get("$name:$k");
        check($g == $v && gettype($g) === gettype($v), "$name roundtrip $k: " . var_export($g, true));
    }
    $e = $c->get("$name:a", null, Client::GET_EXTENDED);
    check(($e['flags'] & 0xf) === ['php' => 4, 'igbinary' => 5, 'msgpack' => 6][$name], "$name type flag");
}
// a value written with igbinary reads back under another serializer setting
$c->setOption(Client::OPT_SERIALIZER, Client::SERIALIZER_PHP);
check($c->get('igbinary:a') == $vals['a'], 'decode follows the stored type');

// scalars stay numeric on the server: increment works on them
$c->set('cnt', 41);
check($c->increment('cnt') === 42, 'increment a stored int');
$raw = $c->get('cnt', null, Client::GET_EXTENDED);
check($raw['flags'] === 1, 'long flag');

// compression
$big = str_repeat('compressible ', 1000);
$c->setOption(Client::OPT_COMPRESSION_THRESHOLD, 100);
foreach ([Client::COMPRESSION_ZLIB => 0x10, Client::COMPRESSION_ZSTD => 0x20] as $t => $bit) {
    $c->setOption(Client::OPT_COMPRESSION_TYPE, $t);
    check($c->set("z$t", $big) && $c->get("z$t") === $big, "compressed roundtrip $t");
    $e = $c->get("z$t", null, Client::GET_EXTENDED);
    check(($e['flags'] & 0x30) === $bit, "compressed flag $t");
    check($c->set("za$t", ['k' => $big]) && $c->get("za$t") === ['k' => $big], "compressed array $t");
}
// under the threshold, or incompressible: stored plain
$c->set('small', 'abc');
check(($c->get('small', null, Client::GET_EXTENDED)['flags'] & 0x30) === 0, 'below threshold plain');
$rnd = random_bytes(5000);
$c->set('rnd', $rnd);
check(($c->get('rnd', null, Client::GET_EXTENDED)['flags'] & 0x30) === 0 && $c->get('rnd') === $rnd, 'incompressible plain');
$c->setOption(Client::OPT_COMPRESSION, false);
$c->set('off', $big);
check(($c->get('off', null, Client::GET_EXTENDED)['flags'] & 0x30) === 0, 'compression off');
// a compressed value is readable with compression off
check($c->get('z1') === $big, 'read compressed with compression off');

// undecodable data: a clear code, no warning, no crash
$c->setOption(Client::OPT_COMPRESSION, false);
$c->set('arr', [1, 2, 3]);
$c->append('arr', 'garbage');
check($c->get('arr') === false && $c->getResultCode() === Client::RES_PAYLOAD_FAILURE, 'corrupt serialized');
$c->set('lng', 5);
$c->append('lng', 'x');
check($c->get('lng') === false && $c->getResultCode() === Client::RES_PAYLOAD_FAILURE, 'corrupt long');
$c->setOption(Client::OPT_COMPRESSION, true);
$c->setOption(Client::OPT_COMPRESSION_TYPE, Client::COMPRESSION_ZLIB);
$c->set('zc', $big);
$c->append('zc', 'xx');
check($c->get('zc') === false && $c->getResultCode() === Client::RES_PAYLOAD_FAILURE, 'corrupt compressed');
check($c->getMulti(['zc', 'small']) === ['small' => 'abc'] && $c->getResultCode() === Client::RES_PAYLOAD_FAILURE, 'getMulti skips undecodable');

// unserializable values
$c->setOption(Client::OPT_SERIALIZER, Client::SERIALIZER_PHP);
try {
    $c->set('closure', function () {});
    check(false, 'closure must not serialize');
} catch (Exception $e) {
    check(str_contains($e->getMessage(), 'Closure'), 'closure: PHP\'s exception');
}
check($c->get('closure') === false, 'closure stored nothing');
echo "done\n";
?>
--EXPECT--
done
