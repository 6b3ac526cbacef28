--TEST--
Mdcached\Client: persistent connections across requests (php-cgi -T), checked before reuse
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
[$proc, $port] = mdc_start_daemon();
$tmp = getenv('MDC_TEST_TMP');
@unlink("$tmp/p.ready");
@unlink("$tmp/p.go");
$script = "$tmp/persistent_req.php";
file_put_contents($script, <<<'PHP'
<?php
$tmp = getenv('MDC_TEST_TMP');
$c = new Mdcached\Client('pers');
$pristine = $c->isPristine();
if ($pristine) {
    $c->addServer('127.0.0.1', (int)getenv('MDC_B_PORT'));
    $c->setOption(Mdcached\Client::OPT_RETRY_TIMEOUT, 2000);
}
$n = $c->increment('req', 1, 1);   // the first operation of the request
$rc = $c->getResultCode();
$s = array_values($c->getStats())[0];
// a plain client opens a connection of its own in every request
$plain = new Mdcached\Client();
$plain->addServer('127.0.0.1', (int)getenv('MDC_B_PORT'));
$plain->get('x');
echo json_encode(['pristine' => $pristine, 'persistent' => $c->isPersistent(), 'n' => $n, 'rc' => $rc,
                  'total' => $s['total_connections'], 'servers' => count($c->getServerList())]), "\n";
if ($pristine) {
    // first request: let the test restart the daemon, so the next request
    // finds its idle persistent socket closed by the server
    touch("$tmp/p.ready");
    for ($i = 0; $i < 1200 && !file_exists("$tmp/p.go"); $i++) {
        usleep(50000);
    }
}
// a second object with the same id in one request gets its own connection
$d = new Mdcached\Client('pers');
echo json_encode(['dup_persistent' => $d->isPersistent(), 'dup_pristine' => $d->isPristine()]), "\n";
PHP);
$h = mdc_cgi_start($script, [], ['MDC_B_PORT' => (string)$port], ['-T', '3']);
for ($i = 0; $i < 1200 && !file_exists("$tmp/p.ready"); $i++) {
    usleep(50000);
}
check(file_exists("$tmp/p.ready"), 'first request ran');
mdc_stop_daemon($proc);
[$proc, $port2] = mdc_start_daemon($port);
check($port2 === $port, 'restarted on the same port');
touch("$tmp/p.go");
$out = mdc_cgi_wait($h);
mdc_stop_daemon($proc);
$lines = array_values(array_filter(explode("\n", $out), fn($l) => str_starts_with($l, '{"pristine"')));
check(count($lines) === 3, "three requests: $out");
$r = array_map(fn($l) => json_decode($l, true), $lines);
check($r[0]["pristine"] === true && $r[1]["pristine"] === false && $r[2]["pristine"] === false, "servers kept across requests: $out");
check($r[0]['persistent'] && $r[2]['persistent'], 'persistent');
check($r[1]['servers'] === 1 && $r[2]['servers'] === 1, 'no duplicate servers');
// request 2: the dead socket was noticed before use, the first operation works
check($r[1]['rc'] === 0 && $r[1]['n'] === 1, 'checked before reuse: ' . json_encode($r[1]));
check($r[2]['rc'] === 0 && $r[2]['n'] === 2, 'third request');
// request 3 reuses request 2's connection: only the plain client's is new
check($r[2]['total'] === $r[1]['total'] + 1, 'connection reused: ' . $r[1]['total'] . ' -> ' . $r[2]['total']);
check(str_contains($out, '{"dup_persistent":false,"dup_pristine":true}'), 'same id twice in a request');
check(!str_contains($out, 'Warning') && !str_contains($out, 'Fatal'), "clean output: $out");
echo "done\n";
?>
--EXPECT--
done
