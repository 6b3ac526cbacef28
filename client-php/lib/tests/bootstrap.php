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

/** The dependency set the suite runs on: debian, psr1, symfony7, ... */
function mdc_test_set(): string
{
    return getenv('MDC_PHP_SET') ?: 'debian';
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
