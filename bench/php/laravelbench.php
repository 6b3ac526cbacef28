<?php
/*
 * bench/php/laravelbench.php - Laravel's tagged cache from PHP, side by side
 * in one process, rounds alternating (a) (b):
 *   (a) Illuminate\Cache\MemcachedStore (php-memcached, memcached): Laravel's
 *       own tagged cache (TagSet ids "tag:<name>:key", keys namespaced by
 *       sha1 of the ids, flush() writes new ids)
 *   (b) Mdcached\Cache\LaravelStore (the extension, mdcached): tags on the
 *       records, flush() one deleteByTag
 * Both through Illuminate\Cache\Repository::tags() of the illuminate/cache
 * the autoloader given as LARAVEL_AUTOLOAD provides (bench/php/laravel.sh:
 * the laravel12 set).  Run by bench/php/laravel.sh, which starts the
 * servers and passes MC_PORT MC_PID MDC_PORT MDC_PID; prints one JSON
 * object per measurement on stdout.
 *
 * Items: ITEMS (20 000) keys "item<i>", ~200-byte values, each with the
 * tags of tagbench.php: "page<p>" (50 items a page), and with probability
 * 1/2 each "user<u>" (u < 2000) and "type<t>" (t < 20).  An item is always
 * reached through tags(its tags), as Laravel requires.  Parts, each OPS
 * operations (FLUSHES for flush) with the same seeded random stream for
 * both:
 *   put    tags(T)->put(item, value, 3600)
 *   get    tags(T)->get(item) (all hits after the population)
 *   flush  tags([page<p>])->flush() of FLUSHES (400) pages in order, on a
 *          fresh population: each drops its page's 50 items (records_after:
 *          the records the server still holds, dead ones included)
 *   mixed  90 % tags(T)->remember(item) (a miss recomputes and puts), 8 %
 *          put, 2 % flush of one of a random item's tags
 * Nothing is kept in PHP between operations: every operation makes its
 * tagged cache with tags().  Figures: operations per second, client CPU
 * (getrusage of this process) and server CPU (its threads' schedstat) per
 * operation, and the server's requests per operation
 * from its statistics (memcached: cmd_get + cmd_set + delete; a multi-get
 * counts its keys; mdcached: the same plus cmd_del_by_tag).  A mixed round
 * reports its misses: both must see the same.
 */
require getenv('LARAVEL_AUTOLOAD');
require __DIR__ . '/../../client-php/lib/autoload.php';

use Illuminate\Cache\MemcachedStore;
use Illuminate\Cache\Repository;
use Mdcached\Cache\LaravelStore;

$ITEMS = (int)(getenv('ITEMS') ?: 20000);
$OPS = (int)(getenv('OPS') ?: 20000);
$FLUSHES = min((int)(getenv('FLUSHES') ?: 400), intdiv($ITEMS, 50));
$ROUNDS = (int)(getenv('ROUNDS') ?: 3);
$only = getenv('ONLY') ?: 'put,get,flush,mixed';

/**
 * CPU seconds of a server process: the sum over its threads of
 * /proc/<pid>/task/<tid>/schedstat (nanoseconds on CPU), which resolves
 * the few milliseconds of a flush part; /proc/<pid>/stat (clock ticks) if
 * schedstat is missing.
 */
function server_cpu(int $pid): float
{
    $ns = 0;
    $tasks = glob("/proc/$pid/task/*/schedstat") ?: [];
    foreach ($tasks as $f) {
        $ns += (int)explode(' ', (string)@file_get_contents($f))[0];
    }
    if ($tasks) {
        return $ns / 1e9;
    }
    static $clk = null;
    $clk ??= (int)trim(shell_exec('getconf CLK_TCK') ?: '100');
    $s = file_get_contents("/proc/$pid/stat");
    $f = explode(' ', substr($s, strrpos($s, ')') + 2));
    return ((int)$f[11] + (int)$f[12]) / $clk;
}
function self_cpu(): float
{
    $r = getrusage();
    return $r['ru_utime.tv_sec'] + $r['ru_utime.tv_usec'] / 1e6 + $r['ru_stime.tv_sec'] + $r['ru_stime.tv_usec'] / 1e6;
}
function out(array $row): void
{
    echo json_encode($row), "\n";
    flush();
}

$memcached = new Memcached();
$memcached->addServer('127.0.0.1', (int)getenv('MC_PORT'));
$mdc = new Mdcached\Client();
$mdc->addServer('127.0.0.1', (int)getenv('MDC_PORT'));
$mdc->setOption(Mdcached\Client::OPT_COMPRESSION, false);
$pids = ['a' => (int)getenv('MC_PID'), 'b' => (int)getenv('MDC_PID')];
$make = [
    'a' => fn() => new Repository(new MemcachedStore($memcached, 'bench')),
    'b' => fn() => new Repository(new LaravelStore($mdc, 'bench')),
];
$flushAll = [
    'a' => fn() => $memcached->flush(),
    'b' => fn() => $mdc->flush(),
];
/** records the server holds (memcached: curr_items; mdcached: curr_items) */
$records = [
    'a' => fn(): int => array_values($memcached->getStats())[0]['curr_items'],
    'b' => fn(): int => array_values($mdc->getStats())[0]['curr_items'],
];
/** requests the server has answered (see the header) */
$requests = [
    'a' => function () use ($memcached): int {
        $s = array_values($memcached->getStats())[0];
        return $s['cmd_get'] + $s['cmd_set'] + $s['delete_hits'] + $s['delete_misses'];
    },
    'b' => function () use ($mdc): int {
        $s = array_values($mdc->getStats())[0];
        return $s['cmd_get'] + $s['cmd_set'] + $s['delete_hits'] + $s['delete_misses'] + $s['cmd_del_by_tag'];
    },
];

function tags_of(int $i): array
{
    $t = ['page' . intdiv($i, 50)];
    $h = crc32("t$i");
    if ($h & 1) {
        $t[] = 'user' . ($h >> 1) % 2000;
    }
    if ($h & 2) {
        $t[] = 'type' . ($h >> 3) % 20;
    }
    return $t;
}
function payload(int $i): string
{
    return str_pad("item $i ", 200, 'x');
}
function populate(Repository $cache, int $n): void
{
    for ($i = 0; $i < $n; $i++) {
        $cache->tags(tags_of($i))->put("item$i", payload($i), 3600);
    }
}

/** @return int misses (mixed), 0 otherwise */
function run_part(string $part, Repository $cache, int $ops, int $items, int $seed): int
{
    mt_srand($seed);
    $misses = 0;
    for ($k = 0; $k < $ops; $k++) {
        $i = mt_rand(0, $items - 1);
        switch ($part) {
        case 'put':
            $cache->tags(tags_of($i))->put("item$i", payload($i), 3600);
            break;
        case 'get':
            if ($cache->tags(tags_of($i))->get("item$i") === null) {
                $misses++;
            }
            break;
        case 'flush':
            // every page once, in order: each flush has its 50 items to drop
            $cache->tags(['page' . ($k % intdiv($items, 50))])->flush();
            break;
        case 'mixed':
            $r = mt_rand(0, 99);
            if ($r < 90) {
                $cache->tags(tags_of($i))->remember("item$i", 3600, function () use ($i, &$misses) {
                    $misses++;
                    return payload($i);
                });
            } elseif ($r < 98) {
                $cache->tags(tags_of($i))->put("item$i", payload($i), 3600);
            } else {
                $t = tags_of($i);
                $cache->tags([$t[mt_rand(0, count($t) - 1)]])->flush();
            }
            break;
        }
    }
    return $misses;
}

$names = ['a' => 'laravel-memcached', 'b' => 'laravel-mdcached'];
out(['meta' => true, 'php' => PHP_VERSION,
     'illuminate/cache' => class_exists(Composer\InstalledVersions::class)
        ? Composer\InstalledVersions::getPrettyVersion('illuminate/cache') : '?',
     'memcached_ext' => phpversion('memcached'), 'mdcached_ext' => phpversion('mdcached'),
     'items' => $ITEMS, 'ops' => $OPS, 'flushes' => $FLUSHES, 'rounds' => $ROUNDS]);
foreach (explode(',', $only) as $part) {
    for ($round = 1; $round <= $ROUNDS; $round++) {
        foreach (['a', 'b'] as $w) {
            ($flushAll[$w])();
            $cache = ($make[$w])();
            populate($cache, $ITEMS);
            if ($part === 'get' || $part === 'mixed') {
                // the reads of the first pass would also fill Laravel's tag ids
                run_part('get', $cache, 1000, $ITEMS, 999);
            }
            $n = $part === 'flush' ? $FLUSHES : $OPS;
            $q0 = ($requests[$w])();
            $c0 = self_cpu();
            $s0 = server_cpu($pids[$w]);
            $t0 = microtime(true);
            $misses = run_part($part, $cache, $n, $ITEMS, 1000 + $round);
            $dt = microtime(true) - $t0;
            $c1 = self_cpu();
            $s1 = server_cpu($pids[$w]);
            $q1 = ($requests[$w])();
            $row = ['part' => $part, 'who' => $names[$w], 'round' => $round, 'ops' => $n,
                 'ops_per_s' => round($n / $dt), 'client_us' => round(($c1 - $c0) / $n * 1e6, 2),
                 'server_us' => round(($s1 - $s0) / $n * 1e6, 2),
                 'requests_per_op' => round(($q1 - $q0) / $n, 2), 'misses' => $misses];
            if ($part === 'flush') {
                // what the flushes left on the server: Laravel's flush only
                // writes new tag ids, the old records stay until evicted
                $row['records_after'] = ($records[$w])();
            }
            out($row);
        }
    }
}
