<?php
require __DIR__ . '/../autoload.php';
require_once 'PHPUnit/Autoload.php';

/** A client on the daemon run-phpunit.sh started. */
function mdc_test_client(): Mdcached\Client
{
    $c = new Mdcached\Client();
    $c->addServer(getenv('MDC_TEST_HOST') ?: '127.0.0.1', (int)getenv('MDC_TEST_PORT'));
    return $c;
}

/** A server statistic (tag index gauges: tag_links, tagged_items, ...). */
function mdc_stat(Mdcached\Client $c, string $name): int
{
    return array_values($c->getStats())[0][$name];
}
