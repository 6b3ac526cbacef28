--TEST--
Mdcached\Client: leases (leaseGet win/pending/stale, deleteStale, deleteByTagStale, one winner across PHP processes)
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$c = mdc_client();
$c->flush();
$W = Client::LEASE_WIN; $S = Client::LEASE_STALE; $P = Client::LEASE_PENDING;
check($W === 1 && $S === 2 && $P === 4, 'LEASE_* constants');

// a fresh record: its value, no state
check($c->set('k', ['v' => 1]), 'set');
$st = -1;
check($c->leaseGet('k', 0, 0, $st) === ['v' => 1] && $st === 0, "fresh: value, state 0 ($st)");
// a miss without vivify: false, not found
$st = -1;
check($c->leaseGet('nope', 0, 0, $st) === false && $st === 0 &&
      $c->getResultCode() === Client::RES_NOTFOUND, 'miss without vivify');
// vivify: the first caller wins (null), the next is pending, a store ends it
$st = -1;
check($c->leaseGet('viv', 30, 0, $st) === null && $st === $W, "vivify: win ($st)");
check($c->getResultCode() === Client::RES_SUCCESS, 'vivify: RES_SUCCESS');
check($c->leaseGet('viv', 30, 0, $st) === null && $st === $P, "vivify: pending ($st)");
check($c->set('viv', 'V'), 'the winner stores');
check($c->leaseGet('viv', 30, 0, $st) === 'V' && $st === 0, "stored: value, state 0 ($st)");
// deleteStale: the stale value with the win, then pending
check($c->deleteStale('k'), 'deleteStale');
check($c->leaseGet('k', 0, 0, $st) === ['v' => 1] && $st === ($S | $W), "stale: win ($st)");
check($c->leaseGet('k', 0, 0, $st) === ['v' => 1] && $st === ($S | $P), "stale: pending ($st)");
$e = $c->leaseGet('k', 0, 0, $st, Client::GET_EXTENDED);
check(is_array($e) && $e['value'] === ['v' => 1] && $e['state'] === ($S | $P), 'GET_EXTENDED has state');
check($c->set('k', 'new') && $c->leaseGet('k', 0, 0, $st) === 'new' && $st === 0, 'store clears stale');
check($c->deleteStale('gone') === false && $c->getResultCode() === Client::RES_NOTFOUND, 'deleteStale missing');
// a stale "" is a value, not a vivified placeholder
check($c->set('e', '') && $c->deleteStale('e'), 'stale empty string');
check($c->leaseGet('e', 0, 0, $st) === '' && $st === ($S | $W), "stale '' ($st)");
// recache: a record with less than recacheTtl left hands out one win
check($c->set('r', 'R', 5), 'set ttl 5');
check($c->leaseGet('r', 0, 10, $st) === 'R' && $st === $W, "recache: win ($st)");
check($c->leaseGet('r', 0, 10, $st) === 'R' && $st === $P, "recache: pending ($st)");
// bad arguments
try { $c->leaseGet('k', -1); echo "no error\n"; } catch (ValueError $x) { echo $x->getMessage(), "\n"; }
try { $c->deleteStale('k', -1); echo "no error\n"; } catch (ValueError $x) { echo $x->getMessage(), "\n"; }
try { $c->deleteByTagStale('t', null, -1); echo "no error\n"; } catch (ValueError $x) { echo $x->getMessage(), "\n"; }
check($c->leaseGet('') === false && $c->getResultCode() === Client::RES_BAD_KEY_PROVIDED, 'bad key');

// deleteByTagStale: the tag selectors of deleteByTag, a count, stale values
for ($i = 0; $i < 50; $i++) {
    check($c->set("s$i", "old$i", 0, ['page:s', 7 => $i % 2]), "set s$i");
}
check($c->set('other', 'O', 0, ['page:t']), 'untouched record');
check($c->deleteByTagStale(7, [5, 6]) === 0, 'deleteByTagStale nothing');
check($c->deleteByTagStale('page:s', null, 60) === 50, 'deleteByTagStale count');
check($c->leaseGet('other', 0, 0, $st) === 'O' && $st === 0, 'other tag untouched');
check($c->get('s3') === 'old3', 'plain get still reads a stale record');

// four PHP processes race for the 50 stale records: one W per record
$script = sys_get_temp_dir() . '/mdc-lease-' . getmypid() . '.php';
file_put_contents($script, '<?php
$c = new Mdcached\Client();
$c->addServer(getenv("MDC_TEST_HOST"), (int)getenv("MDC_TEST_PORT"));
$c->get("warm");
while (microtime(true) < (float)getenv("MDC_GO")) { usleep(200); }
for ($i = 0; $i < 50; $i++) {
    $v = $c->leaseGet("s$i", 0, 0, $st);
    echo "s$i ", $st, " ", $v, "\n";
}
');
$go = sprintf('%.3f', microtime(true) + 0.5);
$hs = [];
for ($n = 0; $n < 4; $n++) {
    $hs[] = mdc_cgi_start($script, [], ['MDC_GO' => $go]);
}
$wins = []; $lines = 0; $bad = [];
foreach ($hs as $h) {
    foreach (explode("\n", trim(mdc_cgi_wait($h))) as $l) {
        if (!preg_match('/^s(\d+) (\d+) (.*)$/', $l, $m)) {
            if (preg_match('/^s\d/', $l)) { $bad[] = $l; }
            continue; // php-cgi's headers
        }
        $lines++;
        $stv = (int)$m[2];
        if ($m[3] !== "old{$m[1]}" || !($stv & $S)) { $bad[] = $l; }
        if ($stv === ($S | $W)) { $wins[$m[1]] = ($wins[$m[1]] ?? 0) + 1; }
        elseif ($stv !== ($S | $P)) { $bad[] = $l; }
    }
}
unlink($script);
check($lines === 200 && !$bad, "children's lines: $lines " . json_encode(array_slice($bad, 0, 3)));
check(count($wins) === 50 && max($wins) === 1 && min($wins) === 1,
      'exactly one winner per record: ' . json_encode($wins));
echo "done\n";
?>
--EXPECT--
Mdcached\Client::leaseGet(): Argument #2 ($vivifyTtl) must be greater than or equal to 0
Mdcached\Client::deleteStale(): Argument #2 ($ttl) must be greater than or equal to 0
Mdcached\Client::deleteByTagStale(): Argument #3 ($ttl) must be greater than or equal to 0
done
