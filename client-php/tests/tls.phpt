--TEST--
Mdcached\Client::setTls(): TLS through libmdcached, against the daemon behind a socat TLS endpoint with certificates made by the openssl command; verification on by default, the insecure opt-out, persistent connections kept
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$tmp = getenv('MDC_TEST_TMP');
$d = "$tmp/tls";
@mkdir($d);
$ec = '-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes';
foreach (["openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=php-test-ca"
              . " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign",
          "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' >srv.ext",
          "openssl req $ec -keyout srv.key -out srv.csr -subj /CN=localhost",
          "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile srv.ext -out srv.pem",
          "openssl req -x509 $ec -keyout self.key -out self.pem -days 2 -subj /CN=localhost"
              . " -addext subjectAltName=IP:127.0.0.1"] as $cmd) {
    exec("cd " . escapeshellarg($d) . " && { $cmd; } >>openssl.log 2>&1", $o, $rc);
    check($rc === 0, "$cmd: " . @file_get_contents("$d/openssl.log"));
}

// endpoints still running when the script ends (a fatal error) are stopped
register_shutdown_function(function () {
    foreach ($GLOBALS['tls_eps'] ?? [] as $p) {
        if (is_resource($p)) {
            proc_terminate($p);
            proc_close($p);
        }
    }
});

/* a socat TLS endpoint in front of the suite's daemon; returns [proc, port] */
function endpoint(string $d, string $cert, string $key): array
{
    /* OPENSSL-LISTEN:0: the kernel picks the port, socat -d -d logs it
     * ("socat[PID] N listening on AF=2 127.0.0.1:PORT"; no probed port
     * another process could take meanwhile) */
    for ($try = 0; $try < 5; $try++) {
        $p = null;
        $proc = proc_open(['socat', '-d', '-d', "OPENSSL-LISTEN:0,bind=127.0.0.1,reuseaddr,fork,cert=$d/$cert,key=$d/$key,verify=0",
                           'TCP:' . getenv('MDC_TEST_HOST') . ':' . getenv('MDC_TEST_PORT')],
                          [0 => ['file', '/dev/null', 'r'], 1 => ['file', "$d/socat.log", 'a'],
                           2 => ['file', "$d/socat.log", 'a']], $pipes);
        $pid = proc_get_status($proc)['pid'];
        for ($i = 0; $i < 3000; $i++) { // 60 s: a ceiling
            if ($p === null && preg_match('/socat\[' . $pid . '\] N listening on AF=2 127\.0\.0\.1:(\d+)/',
                                          (string)@file_get_contents("$d/socat.log"), $m)) {
                $p = (int)$m[1];
            }
            $s = $p === null ? false : @fsockopen('127.0.0.1', $p, $e, $m, 0.2);
            if ($s) {
                fclose($s);
                $GLOBALS['tls_eps'][] = $proc;
                return [$proc, $p];
            }
            if (!proc_get_status($proc)['running']) {
                break;
            }
            usleep(20000);
        }
        proc_terminate($proc);
        proc_close($proc);
    }
    throw new RuntimeException('cannot start socat: ' . @file_get_contents("$d/socat.log"));
}
[$ep, $port] = endpoint($d, 'srv.pem', 'srv.key');
[$ep2, $port2] = endpoint($d, 'self.pem', 'self.key');

// the test CA trusted: records over TLS
$c = new Client();
check($c->setTls(['ca_file' => "$d/ca.pem"]) === true, 'setTls: ' . $c->getResultMessage());
$c->addServer('127.0.0.1', $port);
check($c->set('tk', ['a' => 1], 0, ['t1']) === true, 'set over TLS: ' . $c->getResultMessage());
check($c->get('tk') === ['a' => 1], 'get over TLS');
check(count($c->getByTag('t1')) === 1, 'getByTag over TLS');

// verification is on by default: the system's CAs do not know the test CA
$v = new Client();
$v->addServer('127.0.0.1', $port);
check($v->setTls([]) === true, 'setTls([])');
check($v->get('tk') === false, 'refused');
check($v->getResultCode() === Client::RES_TLS_FAILURE, 'RES_TLS_FAILURE: ' . $v->getResultCode());
check(str_contains($v->getResultMessage(), 'certificate refused'), 'message: ' . $v->getResultMessage());
// a wrong name
$w = new Client();
$w->setTls(['ca_file' => "$d/ca.pem", 'server_name' => 'wrong.example']);
$w->addServer('127.0.0.1', $port);
check($w->get('tk') === false && $w->getResultCode() === Client::RES_TLS_FAILURE, 'wrong name');
// the self-signed endpoint: refused, unless insecure
$s = new Client();
$s->setTls(['ca_file' => "$d/ca.pem"]);
$s->addServer('127.0.0.1', $port2);
check($s->get('tk') === false && $s->getResultCode() === Client::RES_TLS_FAILURE, 'self-signed refused');
$s->resetServerList();
check($s->setTls(['insecure' => true]) === true, 'insecure');
$s->addServer('127.0.0.1', $port2);
check($s->get('tk') === ['a' => 1], 'insecure: ' . $s->getResultMessage());
// back to plain, against the plain port
$s->resetServerList();
check($s->setTls(null) === true, 'setTls(null)');
$s->addServer(getenv('MDC_TEST_HOST'), (int)getenv('MDC_TEST_PORT'));
check($s->get('tk') === ['a' => 1], 'plain again');
// bad options
check($c->setTls(['ca_fiel' => 'x']) === false && $c->getResultCode() === Client::RES_INVALID_ARGUMENTS, 'unknown option');
check($c->setTls(['ca_file' => 5]) === false, 'not a string');
check($c->setTls(['ca_file' => "$d/none.pem"]) === false && $c->getResultCode() === Client::RES_TLS_FAILURE, 'missing file');
check($c->get('tk') === ['a' => 1], 'the settings in force are kept');

// persistent: the same options in the next request keep the connection
$script = "$tmp/tls_req.php";
file_put_contents($script, <<<'PHP'
<?php
$c = new Mdcached\Client('tls-pers');
$c->setTls(['ca_file' => getenv('MDC_CA')]);
if ($c->isPristine()) {
    $c->addServer('127.0.0.1', (int)getenv('MDC_B_PORT'));
}
$s = array_values($c->getStats())[0];
echo json_encode(['rc' => $c->getResultCode(), 'total' => $s['total_connections'] ?? null]), "\n";
PHP);
$out = mdc_cgi($script, [], ['MDC_B_PORT' => (string)$port, 'MDC_CA' => "$d/ca.pem"], ['-T', '2']);
$lines = array_values(array_filter(explode("\n", $out), fn($l) => str_starts_with($l, '{"rc"')));
check(count($lines) === 2, "two requests: $out");
$r = array_map(fn($l) => json_decode($l, true), $lines);
check($r[0]['rc'] === 0 && $r[1]['rc'] === 0, "over TLS: $out");
check($r[1]['total'] === $r[0]['total'], "the TLS connection kept: $out");

echo "done\n";
?>
--EXPECT--
done
