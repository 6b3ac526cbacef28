<?php
/*
 * PHPUnit bootstrap (client-php/tests/run-sets.sh): the dependency set's
 * Composer autoloader first when MDC_PHP_SET_AUTOLOAD names one, with
 * Mdcached\Cache loaded by composer.json's PSR-4 map, as an application's
 * vendor/autoload.php would; else the Debian way, autoload.php.
 */
$setAutoload = getenv('MDC_PHP_SET_AUTOLOAD');
if ($setAutoload !== false && $setAutoload !== '') {
    require $setAutoload;
    $composer = json_decode(file_get_contents(__DIR__ . '/../composer.json'), true);
    foreach ($composer['autoload']['psr-4'] as $prefix => $dir) {
        $base = __DIR__ . '/../' . rtrim($dir, '/') . '/';
        spl_autoload_register(function (string $class) use ($prefix, $base) {
            if (strncmp($class, $prefix, strlen($prefix)) === 0) {
                $f = $base . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
                if (is_file($f)) {
                    require $f;
                }
            }
        });
    }
} else {
    require __DIR__ . '/../autoload.php';
    // what the framework-bundle and illuminate-container groups use
    foreach (['Symfony/Bundle/FrameworkBundle', 'Illuminate/Container'] as $d) {
        if (($f = stream_resolve_include_path("$d/autoload.php")) !== false) {
            require_once $f;
        }
    }
}
require_once 'PHPUnit/Autoload.php';

/*
 * Symfony's stampede lock (LockRegistry: the contracts' get() computes a
 * value under it) flocks Symfony's own source files, so every PHP process
 * that uses the same vendor tree shares it with this one.  Two test runs
 * side by side, each with its own daemon, made one run's get() wait for
 * the other run's lock and then read its own cache again: it answered the
 * value the test had just asked to recompute.  The suite's locks are files
 * of its own, as many as Symfony's (the same spread of keys); a test that
 * is about the lock sets its own (LockRegistry::setFiles).
 */
if (class_exists(Symfony\Component\Cache\LockRegistry::class)) {
    (function (): void {
        $n = count(Symfony\Component\Cache\LockRegistry::setFiles([]));
        $dir = tempnam(sys_get_temp_dir(), 'mdc-sflocks');
        if ($dir === false || !unlink($dir) || !mkdir($dir, 0700)) {
            fwrite(STDERR, "bootstrap: cannot make a directory for the lock files\n");
            exit(1);
        }
        $files = [];
        for ($i = 0; $i < max($n, 1); $i++) {
            $files[] = "$dir/$i";
            touch("$dir/$i");
        }
        Symfony\Component\Cache\LockRegistry::setFiles($files);
        register_shutdown_function(function () use ($dir, $files): void {
            Symfony\Component\Cache\LockRegistry::setFiles([]);
            array_map('unlink', $files);
            rmdir($dir);
        });
    })();
}

/** The dependency set the suite runs on: debian, psr1, symfony7, ... */
function mdc_test_set(): string
{
    return getenv('MDC_PHP_SET') ?: 'debian';
}

/**
 * Wait until a record stored now with a TTL of $ttl seconds has surely
 * expired on the server: its deadline is the first second of the server's
 * clock at or after the TTL (so up to 1 s later), and a read checks it on
 * a coarse clock a few ms behind.  $ttl + 1 s alone can be those few ms
 * short (seen once, in an idle run); 100 ms more is far above that lag.
 */
function mdc_sleep_past_ttl(int $ttl): void
{
    usleep(($ttl + 1) * 1000000 + 100000);
}

/** A client on the daemon run-sets.sh started. */
function mdc_test_client(): Mdcached\Client
{
    $c = new Mdcached\Client();
    $c->addServer(getenv('MDC_TEST_HOST') ?: '127.0.0.1', (int)getenv('MDC_TEST_PORT'));
    return $c;
}

/** A server statistic (tag index gauges: tag_links, tagged_items, ...). */
function mdc_stat(Mdcached\Client $c, string $name): int
{
    // a flush (the tests' setUp) hides the records at once and the
    // server's sweeper reclaims them just after: counts are read once it
    // has (flush_pending 0; 30 s: a hang)
    for ($i = 0; $i < 3000; $i++) {
        $s = array_values($c->getStats())[0];
        if (($s['flush_pending'] ?? 0) == 0) {
            break;
        }
        usleep(10000);
    }
    return $s[$name];
}
