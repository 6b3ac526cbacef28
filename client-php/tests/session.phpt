--TEST--
session handler: two concurrent requests on one session (php-cgi), lock released on every exit path, bounded wait
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$tmp = getenv('MDC_TEST_TMP');
$script = "$tmp/session_req.php";
file_put_contents($script, <<<'PHP'
<?php
// markers make the interleaving deterministic on a loaded machine:
// START_FILE is touched before session_start(), READY_FILE after it; with
// WAIT_FILE the request then waits (at most 10 s) for that file
// (t0 before START_FILE: A's hold starts after the touch, so the wait
// B measures covers it however late B runs on a busy machine)
$t0 = microtime(true);
if (getenv('START_FILE')) {
    touch(getenv('START_FILE'));
}
$ok = session_start();
if ($ok && getenv('READY_FILE')) {
    touch(getenv('READY_FILE'));
}
if ($ok && getenv('WAIT_FILE')) {
    for ($i = 0; $i < 1000 && !file_exists(getenv('WAIT_FILE')); $i++) {
        usleep(10000);
    }
}
$waited = microtime(true) - $t0;
if (!$ok) {
    echo json_encode(['who' => getenv('WHO'), 'started' => false, 'waited' => $waited]), "\n";
    return;
}
$_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
$_SESSION['who'][] = getenv('WHO');
usleep((int)getenv('HOLD_MS') * 1000);
echo json_encode(['who' => getenv('WHO'), 'started' => true, 'waited' => $waited, 'n' => $_SESSION['n']]), "\n";
if (getenv('MODE') === 'throw') {
    throw new RuntimeException('request failed');
}
if (getenv('MODE') === 'exit') {
    exit(3);
}
if (getenv('MODE') === 'destroy') {
    session_destroy();
}
PHP);
$addr = getenv('MDC_TEST_HOST') . ':' . getenv('MDC_TEST_PORT');
$ini = ['session.save_handler' => 'mdcached', 'session.save_path' => $addr,
        'session.use_strict_mode' => '0', 'session.gc_maxlifetime' => '300',
        'display_errors' => 'stdout', 'max_execution_time' => '30'];
$c = mdc_client();
$c->flush();
$req = function (string $sid, string $who, int $hold, string $mode = '', array $extra = [], array $env = []) use ($script, $ini) {
    return mdc_cgi_start($script, $extra + $ini, $env + ['HTTP_COOKIE' => "PHPSESSID=$sid", 'WHO' => $who,
                                                         'HOLD_MS' => (string)$hold, 'MODE' => $mode]);
};
$wait_file = function (string $f) {
    for ($i = 0; $i < 1000 && !file_exists($f); $i++) {
        usleep(10000);
    }
    return file_exists($f);
};
$wait_lock = function (string $sid) use ($c) {
    for ($i = 0; $i < 400 && $c->get("lock.mdc.sess.$sid") === false; $i++) {
        usleep(10000);
    }
    return $c->get("lock.mdc.sess.$sid") !== false;
};
$parse = function (string $out) {
    foreach (explode("\n", $out) as $l) {
        if (str_starts_with($l, '{')) {
            return json_decode($l, true);
        }
    }
    return ['raw' => $out];
};

// two concurrent requests: B waits for A's lock, then sees A's write.
// A holds the session until B has called session_start(), then 400 ms more.
$ha = $req('sessA1', 'A', 400, '', [], ['READY_FILE' => "$tmp/a1.ready", 'WAIT_FILE' => "$tmp/b1.start"]);
check($wait_file("$tmp/a1.ready") && $wait_lock('sessA1'), 'A holds the lock');
$hb = $req('sessA1', 'B', 0, '', [], ['START_FILE' => "$tmp/b1.start"]);
$a = $parse(mdc_cgi_wait($ha));
$b = $parse(mdc_cgi_wait($hb));
check(($a['n'] ?? 0) === 1 && ($b['n'] ?? 0) === 2, 'serialized: ' . json_encode([$a, $b]));
check(($b['waited'] ?? 0) > 0.3, 'B waited for the lock');
$raw = $c->get('mdc.sess.sessA1');
check(is_string($raw) && str_contains($raw, 'n|i:2;'), "both increments kept: $raw");
check($c->get('lock.mdc.sess.sessA1') === false, 'lock released');

// control: the same race without locking loses an update
// (A writes only after B has read)
$ini2 = ['mdcached.sess_locking' => '0'];
$ha = $req('sessN1', 'A', 0, '', $ini2, ['READY_FILE' => "$tmp/n1.ready", 'WAIT_FILE' => "$tmp/n1b.ready"]);
check($wait_file("$tmp/n1.ready"), 'A read');
$hb = $req('sessN1', 'B', 0, '', $ini2, ['READY_FILE' => "$tmp/n1b.ready"]);
$a = $parse(mdc_cgi_wait($ha));
$b = $parse(mdc_cgi_wait($hb));
check(($b['n'] ?? 0) === 1, 'without locking B does not see A: ' . json_encode([$a, $b]));

// every exit path releases the lock: an uncaught exception, exit()
foreach (['throw', 'exit'] as $mode) {
    $h = $req("sessX$mode", 'X', 0, $mode);
    $out = mdc_cgi_wait($h);
    check(str_contains($out, '"started":true'), "$mode ran: $out");
    check($c->get("lock.mdc.sess.sessX$mode") === false, "lock released after $mode");
    $t = microtime(true);
    $r = $parse(mdc_cgi($script, $ini, ['HTTP_COOKIE' => "PHPSESSID=sessX$mode", 'WHO' => 'Y', 'HOLD_MS' => '0']));
    // a lock left behind would hold the next request for its 200 retries
    // (about 30 s, longer on a busy machine) and then fail it: 20 s tells
    // the two apart without a latency bound
    check(($r['waited'] ?? 99) < 20 && microtime(true) - $t < 20, "next request not blocked after $mode: " . json_encode($r));
    check(($r['n'] ?? 0) === ($mode === 'throw' ? 2 : 2), "data written before $mode kept: " . json_encode($r));
}

// destroy removes the record and the lock
mdc_cgi_wait($req('sessD1', 'D', 0, 'destroy'));
check($c->get('mdc.sess.sessD1') === false && $c->get('lock.mdc.sess.sessD1') === false, 'destroy');

// a lock held by someone else: bounded wait, then session_start() fails,
// and the other holder's lock is left alone
$c->set('lock.mdc.sess.sessL1', 'other', 60);
$t = microtime(true);
$out = mdc_cgi($script, ['mdcached.sess_lock_retries' => '5', 'mdcached.sess_lock_wait_max' => '50'] + $ini,
               ['HTTP_COOKIE' => 'PHPSESSID=sessL1', 'WHO' => 'L', 'HOLD_MS' => '0']);
check(str_contains($out, '"started":false') && microtime(true) - $t < 20, "bounded wait: $out");
check(str_contains($out, 'not acquired'), 'a clear warning');
check($c->get('lock.mdc.sess.sessL1') === 'other', "other holder's lock kept");

// a bad save_path: a warning, no crash
$out = mdc_cgi($script, ['session.save_path' => ''] + $ini, ['HTTP_COOKIE' => 'PHPSESSID=sessE1', 'WHO' => 'E', 'HOLD_MS' => '0']);
check(str_contains($out, '"started":false') && str_contains($out, 'save_path'), "empty save_path: $out");
echo "done\n";
?>
--EXPECT--
done
