--TEST--
Mdcached\Client::setSaslAuthData(): the native AUTH against a daemon with --auth-file; wrong and missing credentials; a persistent connection authenticates again after a daemon restart
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$tmp = getenv('MDC_TEST_TMP');
// the daemon may read the file as nobody: a world-readable directory
$adir = "$tmp/auth";
@mkdir($adir);
chmod($adir, 0755);
$users = "$adir/users";
file_put_contents($users, "alice:s3cret\nbob:pa:ss\n");
chmod($users, 0644);
[$proc, $port] = mdc_start_daemon(null, ['--auth-file', $users]);

// no credentials: refused, the code says why
$c = new Client();
$c->addServer('127.0.0.1', $port);
check($c->set('k', 'v') === false, 'set without credentials');
check($c->getResultCode() === Client::RES_AUTH_REQUIRED, 'RES_AUTH_REQUIRED: ' . $c->getResultCode() . ' ' . $c->getResultMessage());

// a wrong password
check($c->setSaslAuthData('alice', 'wrong') === true, 'setSaslAuthData');
check($c->set('k', 'v') === false, 'set with a wrong password');
check($c->getResultCode() === Client::RES_AUTH_FAILURE, 'RES_AUTH_FAILURE: ' . $c->getResultCode());
check(stripos($c->getResultMessage(), 'auth') !== false, 'message: ' . $c->getResultMessage());
check($c->get('k') === false && $c->getResultCode() === Client::RES_AUTH_FAILURE, 'get refused too');

// ... and as an exception with OPT_EXCEPTIONS
$x = new Client();
$x->addServer('127.0.0.1', $port);
$x->setOption(Client::OPT_EXCEPTIONS, true);
$x->setSaslAuthData('bob', 'pa:s');
try {
    $x->get('k');
    check(false, 'no exception');
} catch (Mdcached\Exception $e) {
    check($e->getCode() === Client::RES_AUTH_FAILURE, 'exception code ' . $e->getCode());
}

// the right one, on the same object: it works from the next operation on
check($c->setSaslAuthData('alice', 's3cret') === true, 'setSaslAuthData again');
check($c->set('k', 'v') === true, 'set: ' . $c->getResultMessage());
check($c->get('k') === 'v', 'get');
// a ':' in the password; credentials set before the server is added
$d = new Client();
$d->setSaslAuthData('bob', 'pa:ss');
$d->addServer('127.0.0.1', $port);
check($d->get('k') === 'v', 'bob, a server added after: ' . $d->getResultMessage());

// bad arguments
check($d->setSaslAuthData('', 'x') === false && $d->getResultCode() === Client::RES_INVALID_ARGUMENTS, 'empty user');
check($d->setSaslAuthData("al\0ice", 'x') === false, 'NUL in the user name');
check($d->get('k') === 'v', 'the credentials in force are kept');

// the daemon without --auth-file answers AUTH with "not supported"
$n = new Client();
$n->addServer(getenv('MDC_TEST_HOST'), (int)getenv('MDC_TEST_PORT'));
$n->setSaslAuthData('alice', 's3cret');
check($n->get('k') === false && $n->getResultCode() === Client::RES_NOT_SUPPORTED, 'not supported: ' . $n->getResultCode());

// persistent: request 1 authenticates; the daemon restarts; requests 2 and 3
// reuse the connection object, which authenticates its new connection
@unlink("$tmp/a.ready");
@unlink("$tmp/a.go");
$script = "$tmp/auth_req.php";
file_put_contents($script, <<<'PHP'
<?php
$tmp = getenv('MDC_TEST_TMP');
$c = new Mdcached\Client('auth-pers');
$pristine = $c->isPristine();
if ($pristine) {
    $c->addServer('127.0.0.1', (int)getenv('MDC_B_PORT'));
    $c->setSaslAuthData('alice', 's3cret');
}
$n = $c->increment('areq', 1, 1);
$rc = $c->getResultCode();
$s = array_values($c->getStats())[0];
echo json_encode(['pristine' => $pristine, 'n' => $n, 'rc' => $rc,
                  'total' => $s['total_connections'] ?? null]), "\n";
if ($pristine) {
    touch("$tmp/a.ready");
    for ($i = 0; $i < 1200 && !file_exists("$tmp/a.go"); $i++) {
        usleep(50000);
    }
}
PHP);
$h = mdc_cgi_start($script, [], ['MDC_B_PORT' => (string)$port], ['-T', '3']);
for ($i = 0; $i < 1200 && !file_exists("$tmp/a.ready"); $i++) {
    usleep(50000);
}
check(file_exists("$tmp/a.ready"), 'first request ran');
mdc_stop_daemon($proc);
[$proc, $port2] = mdc_start_daemon($port, ['--auth-file', $users]);
check($port2 === $port, 'restarted on the same port');
touch("$tmp/a.go");
$out = mdc_cgi_wait($h);
mdc_stop_daemon($proc);
$lines = array_values(array_filter(explode("\n", $out), fn($l) => str_starts_with($l, '{"pristine"')));
check(count($lines) === 3, "three requests: $out");
$r = array_map(fn($l) => json_decode($l, true), $lines);
check($r[0]['rc'] === 0 && $r[0]['n'] === 1, 'request 1: ' . json_encode($r[0]));
// request 2: a new daemon, a new connection, authenticated again
check($r[1]['pristine'] === false && $r[1]['rc'] === 0 && $r[1]['n'] === 1, 'request 2 after the restart: ' . json_encode($r[1]));
check($r[2]['rc'] === 0 && $r[2]['n'] === 2, 'request 3: ' . json_encode($r[2]));
check($r[2]['total'] === $r[1]['total'], 'request 3 reuses the connection: ' . json_encode($r));
check(!str_contains($out, 'Warning') && !str_contains($out, 'Fatal'), "clean output: $out");
echo "done\n";
?>
--EXPECT--
done
