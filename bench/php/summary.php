<?php
/* bench/php/summary.php FILE.jsonl - tables of bench/php/tagbench.php's
 * output: per-round ratios (same round, side by side), median and range. */
$rows = array_map(fn($l) => json_decode($l, true),
                  array_filter(file($argv[1], FILE_IGNORE_NEW_LINES), fn($l) => $l !== '' && $l[0] === '{'));
function med(array $v): float { sort($v); $n = count($v); return $n % 2 ? $v[intdiv($n, 2)] : ($v[$n / 2 - 1] + $v[$n / 2]) / 2; }
function rng(array $v): string { return sprintf('%.2f-%.2f', min($v), max($v)); }
$names = ['a' => '(a) TagAware+Memcached', 'b' => '(b) RedisTagAware', 'c' => '(c) mdcached adapter'];
$by = [];
foreach ($rows as $r) {
    if ($r['test'] === 'versions') {
        echo 'Versions: ', json_encode(array_diff_key($r, ['test' => 1])), "\n";
    }
    $by[$r['test']][] = $r;
}
if (isset($by['mixed'])) {
    $m = [];
    foreach ($by['mixed'] as $r) {
        $m[$r['round']][$r['who']] = $r;
    }
    echo "Mixed workload (90% get, 8% save, 2% invalidateTags), per contender: median over rounds\n";
    printf("%-26s %10s %12s %12s %12s %9s %s\n", '', 'ops/s', 'client us/op', 'server us/op', 'total us/op', 'req/op', 'misses');
    $present = array_unique(array_map(fn($r) => $r['who'], $by['mixed']));
    foreach ($names as $k => $n) {
        if (!in_array($k, $present, true)) {
            continue;
        }
        $col = fn($f) => med(array_map(fn($r) => $r[$k][$f] ?? 0, $m));
        printf("%-26s %10.0f %12.1f %12.1f %12.1f %9.2f %s\n", $n, $col('ops_per_s'), $col('client_us_per_op'),
               $col('server_us_per_op'), med(array_map(fn($r) => $r[$k]['client_us_per_op'] + $r[$k]['server_us_per_op'], $m)),
               $col('requests_per_op'), implode('/', array_map(fn($r) => $r[$k]['misses'], $m)));
    }
    echo "user/system CPU split, us/op (medians): client user, client sys, server user, server sys\n";
    foreach ($names as $k => $n) {
        if (in_array($k, $present, true) && isset(reset($m)[$k]['client_sys_us_per_op'])) {
            $col = fn($f) => med(array_map(fn($r) => $r[$k][$f] ?? 0, $m));
            printf("%-26s %8.1f %8.1f %8.1f %8.1f\n", $n, $col('client_user_us_per_op'), $col('client_sys_us_per_op'),
                   $col('server_user_us_per_op'), $col('server_sys_us_per_op'));
        }
    }
    foreach (['a', 'b'] as $o) {
        if (!in_array($o, $present, true) || !in_array('c', $present, true)) {
            continue;
        }
        $thr = array_map(fn($r) => $r['c']['ops_per_s'] / $r[$o]['ops_per_s'], $m);
        $cpu = array_map(fn($r) => ($r['c']['client_us_per_op'] + $r['c']['server_us_per_op']) /
                                   ($r[$o]['client_us_per_op'] + $r[$o]['server_us_per_op']), $m);
        printf("(c)/%s: throughput x%.2f (rounds %s), CPU per op x%.2f (rounds %s)\n", $o, med($thr), rng($thr), med($cpu), rng($cpu));
    }
}
if (isset($by['invalidate'])) {
    $ms = [];
    foreach ($by['invalidate'] as $r) {
        $ms[$r['who']][] = $r['ms'];
        if (!$r['items_gone']) echo "WARNING: {$r['who']} round {$r['round']}: items still readable\n";
    }
    echo "\ninvalidateTags() of one tag holding {$by['invalidate'][0]['items']} items, ms: median (range)\n";
    foreach ($names as $k => $n) {
        printf("%-26s %8.2f (%s)\n", $n, med($ms[$k]), rng($ms[$k]));
    }
    printf("(c)/(b) latency: x%.3f\n", med($ms['c']) / med($ms['b']));
}
if (isset($by['expiry'])) {
    echo "\nIndex left after every item expired:\n";
    foreach ($by['expiry'] as $r) {
        echo '  ', json_encode($r), "\n";
    }
}
if (isset($by['get32'])) {
    $g = [];
    foreach ($by['get32'] as $r) {
        $g[$r['round']][$r['who']] = $r;
    }
    $ratio = array_map(fn($r) => $r['ext']['client_us_per_get'] / $r['php-memcached']['client_us_per_get'], $g);
    printf("\n32-byte get, client CPU per call: extension %.2f us, php-memcached %.2f us (medians); ratio x%.2f (rounds %s)\n",
           med(array_map(fn($r) => $r['ext']['client_us_per_get'], $g)),
           med(array_map(fn($r) => $r['php-memcached']['client_us_per_get'], $g)), med($ratio), rng($ratio));
}
