<?php
/*
 * bench/php/tagbench.php - the Symfony-style page workload from PHP against
 * three tag-aware Symfony caches, side by side in one process, rounds
 * alternating (a) (b) (c):
 *   (a) TagAwareAdapter over MemcachedAdapter (php-memcached, memcached)
 *   (b) RedisTagAwareAdapter over phpredis (Redis)
 *   (c) Mdcached\Cache\SymfonyTagAwareAdapter (the extension, mdcached)
 * Run by bench/php/run.sh, which starts the servers and passes
 *   MC_PORT MC_PID RD_PORT RD_PID MDC_PORT MDC_PID
 * in the environment; prints one JSON object per measurement on stdout.
 * WHO=abc (default) selects contenders; ONLY=mixed,populate-only runs the
 * population without the operations (to subtract in instruction counts).
 *
 * Workload: ITEMS (20 000) items "item<i>" of ~200 bytes, each with 1-3
 * tags: "page<p>" (items grouped by 50), and with probability 1/2 each
 * "user<u>" (u < 2000) and "type<t>" (t < 20).  Per operation: 90 % read
 * of a random item through the contracts' get() (a miss recomputes and
 * saves it with its tags), 8 % write (save with its tags), 2 %
 * invalidateTags() of one of a random item's tags.  The random streams are
 * seeded the same for every contender.  Figures: operations per second,
 * client CPU (getrusage of this process) and server CPU (utime+stime of the
 * server process from /proc/<pid>/stat) per operation.
 */
// SET=<dir>/vendor/autoload.php: a Composer set (symfony/cache 7.1: the
// symfony7 set of the PHP tests) with Mdcached\Cache by composer.json's
// PSR-4 map; else Debian's (symfony/cache 5.4) through autoload.php
if (($set = getenv('SET')) !== false && $set !== '') {
    require $set;
    $composer = json_decode(file_get_contents(__DIR__ . '/../../client-php/lib/composer.json'), true);
    foreach ($composer['autoload']['psr-4'] as $prefix => $dir) {
        spl_autoload_register(function (string $class) use ($prefix, $dir) {
            if (strncmp($class, $prefix, strlen($prefix)) === 0) {
                $f = __DIR__ . '/../../client-php/lib/' . $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
                if (is_file($f)) {
                    require $f;
                }
            }
        });
    }
} else {
    require __DIR__ . '/../../client-php/lib/autoload.php';
}

use Symfony\Component\Cache\Adapter\MemcachedAdapter;
use Symfony\Component\Cache\Adapter\RedisAdapter;
use Symfony\Component\Cache\Adapter\RedisTagAwareAdapter;
use Symfony\Component\Cache\Adapter\TagAwareAdapter;
use Symfony\Contracts\Cache\ItemInterface;

$ITEMS = (int)(getenv('ITEMS') ?: 20000);
$OPS = (int)(getenv('OPS') ?: 20000);
$ROUNDS = (int)(getenv('ROUNDS') ?: 3);
$BIGTAG = (int)(getenv('BIGTAG') ?: 10000);
$GETS = (int)(getenv('GETS') ?: 50000);
$only = getenv('ONLY') ?: 'mixed,invalidate,expiry,get32';

$clk = (int)trim(shell_exec('getconf CLK_TCK') ?: '100');
function server_cpu(int $pid): float
{
    global $clk;
    $s = file_get_contents("/proc/$pid/stat");
    $f = explode(' ', substr($s, strrpos($s, ')') + 2));
    return ((int)$f[11] + (int)$f[12]) / $clk;
}
/** [user, system] seconds of a server process */
function server_cpu_split(int $pid): array
{
    global $clk;
    $s = file_get_contents("/proc/$pid/stat");
    $f = explode(' ', substr($s, strrpos($s, ')') + 2));
    return [(int)$f[11] / $clk, (int)$f[12] / $clk];
}
/** [user, system] seconds of this process */
function self_cpu_split(): array
{
    $r = getrusage();
    return [$r['ru_utime.tv_sec'] + $r['ru_utime.tv_usec'] / 1e6, $r['ru_stime.tv_sec'] + $r['ru_stime.tv_usec'] / 1e6];
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

$mcPort = (int)getenv('MC_PORT');
$rdPort = (int)getenv('RD_PORT');
$mdcPort = (int)getenv('MDC_PORT');
$pids = ['a' => (int)getenv('MC_PID'), 'b' => (int)getenv('RD_PID'), 'c' => (int)getenv('MDC_PID')];

function mdc_client(): Mdcached\Client
{
    $c = new Mdcached\Client();
    $c->addServer('127.0.0.1', (int)getenv('MDC_PORT'));
    $c->setOption(Mdcached\Client::OPT_COMPRESSION, false);
    return $c;
}
/* requests each server counted: memcached and mdcached per key (gets,
 * sets, deletes, touches, arithmetic, CAS, and mdcached's tag requests),
 * Redis per command */
function server_requests(string $x): int
{
    global $memcached, $redis, $mdc, $mcPort;
    if ($x === 'b') {
        return (int)$redis->info('stats')['total_commands_processed'];
    }
    $s = $x === 'a' ? $memcached->getStats()["127.0.0.1:$mcPort"] : array_values($mdc->getStats())[0];
    $n = 0;
    foreach (['cmd_get', 'cmd_set', 'cmd_touch', 'delete_hits', 'delete_misses', 'incr_hits', 'incr_misses',
              'decr_hits', 'decr_misses', 'cas_hits', 'cas_misses', 'cas_badval', 'cmd_get_by_tag',
              'cmd_del_by_tag', 'cmd_atomic'] as $k) {
        $n += (int)($s[$k] ?? 0);
    }
    return $n;
}
$memcached = MemcachedAdapter::createConnection("memcached://127.0.0.1:$mcPort");
$redis = RedisAdapter::createConnection("redis://127.0.0.1:$rdPort");
$mdc = mdc_client();
$make = [
    // knownTagVersionsTtl 0: no tag versions kept in PHP between operations
    'a' => fn(string $ns) => new TagAwareAdapter(new MemcachedAdapter($memcached, $ns), null, 0),
    'b' => fn(string $ns) => new RedisTagAwareAdapter($redis, $ns),
    'c' => fn(string $ns) => new Mdcached\Cache\SymfonyTagAwareAdapter($mdc, $ns),
];
$flush = [
    'a' => fn() => $memcached->flush(),
    'b' => fn() => $redis->flushAll(),
    'c' => fn() => $mdc->flush(),
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

function populate($pool, int $n): void
{
    for ($i = 0; $i < $n; $i++) {
        $pool->saveDeferred($pool->getItem("item$i")->set(payload($i))->tag(tags_of($i)));
        if ($i % 500 === 499) {
            $pool->commit();
        }
    }
    $pool->commit();
}

function mixed_round($pool, int $ops, int $items, int $seed): array
{
    mt_srand($seed);
    $misses = 0;
    $inv = 0;
    for ($k = 0; $k < $ops; $k++) {
        $r = mt_rand(0, 99);
        $i = mt_rand(0, $items - 1);
        if ($r < 90) {
            $pool->get("item$i", function (ItemInterface $item) use ($i, &$misses) {
                $misses++;
                $item->tag(tags_of($i));
                return payload($i);
            });
        } elseif ($r < 98) {
            $pool->save($pool->getItem("item$i")->set(payload($i))->tag(tags_of($i)));
        } else {
            $t = tags_of($i);
            $pool->invalidateTags([$t[mt_rand(0, count($t) - 1)]]);
            $inv++;
        }
    }
    return ['misses' => $misses, 'invalidations' => $inv];
}

$versions = ['test' => 'versions', 'php' => PHP_VERSION];
if (class_exists(Composer\InstalledVersions::class)) {
    foreach (['symfony/cache', 'symfony/cache-contracts', 'psr/cache'] as $p) {
        $versions[$p] = Composer\InstalledVersions::getPrettyVersion($p);
    }
} else {
    $versions['symfony/cache'] = 'Debian ' . trim((string)shell_exec("dpkg-query -W -f '\${Version}' php-symfony-cache 2>/dev/null"));
}
out($versions);

$order = str_split(getenv('WHO') ?: 'abc'); // a subset, e.g. for callgrind
$mixedOps = str_contains($only, 'populate-only') ? 0 : $OPS;
if (str_contains($only, 'mixed')) {
    foreach ($order as $x) {
        $flush[$x]();
        populate($make[$x]('mix'), $ITEMS);
    }
    for ($round = 1; $round <= $ROUNDS; $round++) {
        foreach ($order as $x) {
            $pool = $make[$x]('mix');
            $q0 = server_requests($x);
            $ss0 = server_cpu_split($pids[$x]);
            $cs0 = self_cpu_split();
            $s0 = server_cpu($pids[$x]);
            $c0 = self_cpu();
            $t0 = hrtime(true);
            $info = mixed_round($pool, $mixedOps, $ITEMS, 1000 + $round);
            $wall = (hrtime(true) - $t0) / 1e9;
            $c1 = self_cpu();
            $s1 = server_cpu($pids[$x]);
            $cs1 = self_cpu_split();
            $ss1 = server_cpu_split($pids[$x]);
            $q1 = server_requests($x) - ($x === 'b' ? 1 : 0); // the INFO itself
            out(['test' => 'mixed', 'round' => $round, 'who' => $x, 'ops' => $OPS, 'secs' => $wall,
                 'requests_per_op' => ($q1 - $q0) / max(1, $mixedOps),
                 'ops_per_s' => $OPS / $wall, 'client_us_per_op' => ($c1 - $c0) / $OPS * 1e6,
                 'server_us_per_op' => ($s1 - $s0) / $OPS * 1e6,
                 // user and kernel time apart (the kernel's: system calls, wakeups)
                 'client_user_us_per_op' => ($cs1[0] - $cs0[0]) / $OPS * 1e6,
                 'client_sys_us_per_op' => ($cs1[1] - $cs0[1]) / $OPS * 1e6,
                 'server_user_us_per_op' => ($ss1[0] - $ss0[0]) / $OPS * 1e6,
                 'server_sys_us_per_op' => ($ss1[1] - $ss0[1]) / $OPS * 1e6] + $info);
        }
    }
}

if (str_contains($only, 'invalidate')) {
    // invalidateTags() of one tag that holds BIGTAG items
    for ($round = 1; $round <= $ROUNDS; $round++) {
        foreach ($order as $x) {
            $flush[$x]();
            $pool = $make[$x]('big');
            for ($i = 0; $i < $BIGTAG; $i++) {
                $pool->saveDeferred($pool->getItem("b$i")->set(payload($i))->tag(['big', "own$i"]));
                if ($i % 500 === 499) {
                    $pool->commit();
                }
            }
            $pool->commit();
            $t0 = hrtime(true);
            $ok = $pool->invalidateTags(['big']);
            $lat = (hrtime(true) - $t0) / 1e6;
            $gone = !$pool->getItem('b0')->isHit() && !$pool->getItem('b' . ($BIGTAG - 1))->isHit();
            out(['test' => 'invalidate', 'round' => $round, 'who' => $x, 'items' => $BIGTAG,
                 'ms' => $lat, 'ok' => $ok, 'items_gone' => $gone]);
        }
    }
}

if (str_contains($only, 'expiry')) {
    // tag index left once every item expired
    foreach ($order as $x) {
        $flush[$x]();
    }
    $before = [
        'a' => $memcached->getStats()["127.0.0.1:$mcPort"],
        'b' => $redis->info('memory')['used_memory'],
    ];
    foreach ($order as $x) {
        populate(new class($make[$x]('exp')) {
            private $p;
            public function __construct($p) { $this->p = $p; }
            public function getItem($k) { return $this->p->getItem($k)->expiresAfter(2); }
            public function saveDeferred($i) { return $this->p->saveDeferred($i); }
            public function commit() { return $this->p->commit(); }
        }, $ITEMS);
    }
    $mdcStats = fn() => array_values($mdc->getStats())[0];
    out(['test' => 'expiry', 'when' => 'stored', 'a_items' => $memcached->getStats()["127.0.0.1:$mcPort"]['curr_items'],
         'b_keys' => $redis->dbSize(), 'b_used_memory' => $redis->info('memory')['used_memory'],
         'c_tag_links' => $mdcStats()['tag_links'], 'c_tag_bytes' => $mdcStats()['tag_bytes'],
         'c_items' => $mdcStats()['curr_items']]);
    // wait for expiry and the servers' own reclamation (mdcached's sweep
    // visits every bucket within 10 intervals; memcached's LRU crawler;
    // Redis's active expiry)
    sleep((int)(getenv('EXPIRY_WAIT') ?: 15));
    $ms = $memcached->getStats()["127.0.0.1:$mcPort"];
    $m = $mdcStats();
    out(['test' => 'expiry', 'when' => 'after', 'a_items' => $ms['curr_items'], 'a_bytes' => $ms['bytes'],
         'b_keys' => $redis->dbSize(), 'b_used_memory_delta' => $redis->info('memory')['used_memory'] - $before['b'],
         'b_tag_sets' => count($redis->keys("exp:*")),
         'c_items' => $m['curr_items'], 'c_tag_links' => $m['tag_links'], 'c_tag_bytes' => $m['tag_bytes'],
         'c_tagged_items' => $m['tagged_items']]);
}

if (str_contains($only, 'get32')) {
    // a 32-byte get: client CPU per call, the extension against
    // php-memcached, both on the same mdcached server
    $m = new Memcached();
    $m->addServer('127.0.0.1', $mdcPort);
    $m->setOption(Memcached::OPT_COMPRESSION, false);
    $value = str_repeat('v', 32);
    $mdc->set('g32', $value);
    $m->set('g32m', $value);
    check32($m->get('g32m') === $value && $mdc->get('g32') === $value);
    for ($round = 1; $round <= $ROUNDS; $round++) {
        foreach (['ext' => fn() => $mdc->get('g32'), 'php-memcached' => fn() => $m->get('g32m')] as $who => $f) {
            $c0 = self_cpu();
            $t0 = hrtime(true);
            for ($k = 0; $k < $GETS; $k++) {
                $f();
            }
            $wall = (hrtime(true) - $t0) / 1e9;
            $c1 = self_cpu();
            out(['test' => 'get32', 'round' => $round, 'who' => $who, 'gets' => $GETS,
                 'client_us_per_get' => ($c1 - $c0) / $GETS * 1e6, 'wall_us_per_get' => $wall / $GETS * 1e6]);
        }
    }
}
function check32(bool $ok): void
{
    if (!$ok) {
        fwrite(STDERR, "get32: values differ\n");
        exit(1);
    }
}
