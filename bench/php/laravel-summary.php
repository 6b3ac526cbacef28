<?php
/* bench/php/laravel-summary.php FILE.jsonl - the table of
 * bench/php/laravelbench.php's output: per part, each contender's median
 * over rounds, and the ratio mdcached / memcached of client+server CPU per
 * operation, per round (same round, side by side): median and range. */
$rows = array_map(fn($l) => json_decode($l, true),
                  array_filter(file($argv[1], FILE_IGNORE_NEW_LINES), fn($l) => $l !== '' && $l[0] === '{'));
function med(array $v): float { sort($v); $n = count($v); return $n % 2 ? $v[intdiv($n, 2)] : ($v[$n / 2 - 1] + $v[$n / 2]) / 2; }
function rng(array $v): string { return sprintf('%.2f-%.2f', min($v), max($v)); }
$by = [];
foreach ($rows as $r) {
    if (isset($r['meta'])) {
        echo 'PHP ', $r['php'], ', illuminate/cache ', $r['illuminate/cache'], ', php-memcached ', $r['memcached_ext'],
             ', mdcached ', $r['mdcached_ext'], "; items {$r['items']}, ops {$r['ops']}, flushes {$r['flushes']}, rounds {$r['rounds']}\n";
        continue;
    }
    $by[$r['part']][$r['round']][$r['who']] = $r;
}
$names = ['laravel-memcached' => 'Laravel tags, memcached', 'laravel-mdcached' => 'mdcached driver'];
printf("%-6s %-24s %9s %10s %10s %10s %9s %7s\n", 'part', '', 'ops/s', 'client us', 'server us', 'total us', 'req/op', 'misses');
foreach ($by as $part => $rounds) {
    foreach ($names as $k => $n) {
        $col = fn($f) => med(array_map(fn($r) => $r[$k][$f], $rounds));
        printf("%-6s %-24s %9.0f %10.2f %10.2f %10.2f %9.2f %7s\n", $part, $n, $col('ops_per_s'), $col('client_us'),
               $col('server_us'), med(array_map(fn($r) => $r[$k]['client_us'] + $r[$k]['server_us'], $rounds)),
               $col('requests_per_op'), implode('/', array_map(fn($r) => $r[$k]['misses'], $rounds)));
    }
    $ratio = array_map(fn($r) => ($r['laravel-mdcached']['client_us'] + $r['laravel-mdcached']['server_us']) /
                                 ($r['laravel-memcached']['client_us'] + $r['laravel-memcached']['server_us']), $rounds);
    $cl = array_map(fn($r) => $r['laravel-mdcached']['client_us'] / $r['laravel-memcached']['client_us'], $rounds);
    printf("%-6s mdcached/memcached client+server CPU per op x%.2f (rounds %s); client alone x%.2f\n", $part, med($ratio), rng($ratio), med($cl));
    if (isset(reset($rounds)['laravel-mdcached']['records_after'])) {
        printf("%-6s records left on the server after the flushes: memcached %s, mdcached %s\n", $part,
               implode('/', array_map(fn($r) => $r['laravel-memcached']['records_after'], $rounds)),
               implode('/', array_map(fn($r) => $r['laravel-mdcached']['records_after'], $rounds)));
    }
    foreach ($rounds as $i => $r) {
        if ($r['laravel-mdcached']['misses'] !== $r['laravel-memcached']['misses']) {
            echo "WARNING: $part round $i: misses differ\n";
        }
    }
}
