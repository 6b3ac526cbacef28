--TEST--
Mdcached\Client: a pool of three servers (ketama placement as php-memcached's, getMulti, tag fan-out, partial failure), Unix socket
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
[$p1, $port1] = mdc_start_daemon();
[$p2, $port2] = mdc_start_daemon();
$ports = [(int)getenv('MDC_TEST_PORT'), $port1, $port2];
$c = new Client();
$c->addServers([['127.0.0.1', $ports[0]], ['127.0.0.1', $ports[1], 2], ['127.0.0.1', $ports[2]]]);
$c->flush();
check(count($c->getServerList()) === 3, 'three servers');

// placement: libmdcached's ketama, as php-memcached with OPT_LIBKETAMA_COMPATIBLE
check(extension_loaded('memcached'), 'php-memcached loaded by the runner');
$m = new Memcached();
$m->setOption(Memcached::OPT_LIBKETAMA_COMPATIBLE, true);
$m->addServers([['127.0.0.1', $ports[0], 1], ['127.0.0.1', $ports[1], 2], ['127.0.0.1', $ports[2], 1]]);
$same = 0;
for ($i = 0; $i < 300; $i++) {
    $a = $c->getServerByKey("key:$i");
    $b = $m->getServerByKey("key:$i");
    $same += ($a['port'] === $b['port']) ? 1 : 0;
}
check($same === 300, "ketama placement equal for $same/300 keys");

// records spread over the servers; getMulti gathers them
$keys = [];
for ($i = 0; $i < 60; $i++) {
    $keys[] = "k$i";
    check($c->set("k$i", $i, 0, ['pooltag', 7 => $i % 2]), "set k$i");
}
$per = [];
foreach ($ports as $p) {
    $one = new Client();
    $one->addServer('127.0.0.1', $p);
    $per[$p] = count($one->getMulti($keys));
}
check(array_sum($per) === 60 && min($per) > 0, 'spread ' . json_encode($per));
$all = $c->getMulti($keys);
check(count($all) === 60 && $all['k59'] === 59, 'getMulti over three servers');
check(count($c->getByTag('pooltag')) === 60, 'getByTag fans out');
check($c->deleteByTag(7, 1) === 30, 'deleteByTag fans out, count summed');
check(count($c->getByTag('pooltag')) === 30, 'the others stay');
check(count($c->getServerResults()) === 3, 'per-server results');
check($c->setMulti(['x1' => 1, 'x2' => 2, 'x3' => 3, 'x4' => 4], 0, ['multi']) && count($c->getByTag('multi')) === 4, 'setMulti per server');

// one server dies: partial results with a per-server code
mdc_stop_daemon($p2);
usleep(100000);
$n = $c->deleteByTag('pooltag');
check($n === 30 - $per[$port2] / 2 || ($n > 0 && $n < 30), "partial deleteByTag count $n");
check($c->getResultCode() === Client::RES_SOME_ERRORS, 'partial code ' . $c->getResultCode());
$rs = $c->getServerResults();
check($rs["127.0.0.1:$port2"] !== 0 && $rs["127.0.0.1:$port1"] === 0, 'failing server named ' . json_encode($rs));
check(str_contains($c->getResultMessage(), (string)$port2), 'message names the server: ' . $c->getResultMessage());
$g = $c->getMulti($keys);
check(is_array($g) && $c->getResultCode() === Client::RES_SOME_ERRORS, 'getMulti partial');
$c->setOption(Client::OPT_EXCEPTIONS, true);
try { $c->deleteByTag('pooltag'); check(false, 'partial throws'); }
catch (Mdcached\Exception $e) { check($e->getCode() === Client::RES_SOME_ERRORS, 'partial exception'); }
mdc_stop_daemon($p1);

// Unix socket
$u = new Client();
check($u->addServer(getenv('MDC_TEST_SOCK')), 'unix addServer');
check($u->getServerList()[0]['host'] === getenv('MDC_TEST_SOCK'), 'unix in list');
check($u->set('unix-key', 'via unix', 0, ['ux']) && $u->get('unix-key') === 'via unix', 'unix set/get');
$t = mdc_client();
check($t->get('unix-key') === 'via unix', 'same daemon over TCP');
check($u->deleteByTag('ux') === 1, 'unix deleteByTag');
echo "done\n";
?>
--EXPECT--
done
