<?php
/*
 * What LaravelServiceProviderTest (a stand-in container, every Laravel set)
 * and LaravelContainerTest (Debian's illuminate/container) both check: the
 * "mdcached" driver that Mdcached\Cache\LaravelServiceProvider registers,
 * configured as in config/cache.php.  The using class provides app(array
 * $cacheConfig, bool $resolveFirst): a container with Laravel's own
 * CacheServiceProvider and ours registered (ours after "cache" was resolved
 * when $resolveFirst).
 */
use Illuminate\Cache\Repository;
use Illuminate\Cache\TaggedCache;
use Illuminate\Contracts\Cache\LockProvider;
use Mdcached\Cache\LaravelStore;

trait LaravelProviderChecks
{
    private Mdcached\Client $c;

    protected function setUp(): void
    {
        $this->c = mdc_test_client();
        $this->c->flush();
    }

    /** config/cache.php as an application writes it */
    private static function cacheConfig(array $more = []): array
    {
        $servers = [['host' => getenv('MDC_TEST_HOST') ?: '127.0.0.1', 'port' => (int)getenv('MDC_TEST_PORT'), 'weight' => 100]];
        return array_replace_recursive([
            'default' => 'mdcached',
            'prefix' => 'app_cache',
            'stores' => [
                'mdcached' => ['driver' => 'mdcached', 'servers' => $servers],
                'tuned' => [
                    'driver' => 'mdcached',
                    'servers' => $servers,
                    'prefix' => 'tuned',
                    // one object per id and process is persistent: a new id each time
                    'persistent_id' => uniqid('mdc-laravel-test-', true),
                    'options' => [Mdcached\Client::OPT_COMPRESSION => false, Mdcached\Client::OPT_READ_TIMEOUT => 1500],
                ],
                'array' => ['driver' => 'array'],
            ],
        ], $more);
    }

    public function testDriverFromConfig(): void
    {
        $app = $this->app(self::cacheConfig());
        $cache = $app['cache']->store('mdcached');
        $this->assertInstanceOf(Repository::class, $cache);
        $store = $cache->getStore();
        $this->assertInstanceOf(LaravelStore::class, $store);
        $this->assertInstanceOf(LockProvider::class, $store);
        $this->assertSame('app_cache:', $store->getPrefix(), 'the prefix defaults to cache.prefix');
        $this->assertTrue($cache->put('k', 'v', 60));
        $this->assertSame('v', $this->c->get('app_cache:k'), 'written to the configured server');
        $this->assertSame('v', $app['cache']->get('k'), 'the default store');
        $this->assertSame($cache, $app['cache']->store(), 'one repository per store');

        $tagged = $cache->tags(['users', 'pages']);
        $this->assertInstanceOf(TaggedCache::class, $tagged);
        $this->assertSame(['users', 'pages'], $tagged->getTags()->getNames());
        $tagged->put('u1', 'U', 60);
        $scope = sha1('laravel:app_cache::tag:users|laravel:app_cache::tag:pages');
        $this->assertSame(["app_cache:$scope:u1" => 'U'], $this->c->getByTag('laravel:app_cache::tag:users'),
                          'the key scoped by the tags, as Laravel\'s tagged caches do');
        $this->assertSame('U', $tagged->get('u1'));
        $this->assertTrue($cache->tags('pages')->flush());
        $this->assertNull($tagged->get('u1'));

        $lock = $cache->lock('job', 10);
        $this->assertTrue($lock->acquire());
        $this->assertFalse($cache->lock('job', 10)->acquire());
        $this->assertTrue($cache->restoreLock('job', $lock->owner())->release());
        $this->assertSame(3, $cache->remember('rem', 60, fn() => 3));
        $this->assertTrue($cache->flush());
        $this->assertNull($cache->get('k'));
        $this->assertSame('v2', $app['cache']->store('array')->remember('a', 60, fn() => 'v2'), 'other drivers still work');
    }

    public function testStoreOptions(): void
    {
        $app = $this->app(self::cacheConfig());
        $store = $app['cache']->store('tuned')->getStore();
        $this->assertSame('tuned:', $store->getPrefix(), 'the store\'s own prefix');
        $client = $store->getClient();
        $this->assertTrue($client->isPersistent(), 'persistent_id');
        $this->assertFalse($client->getOption(Mdcached\Client::OPT_COMPRESSION), 'options');
        $this->assertSame(1500, $client->getOption(Mdcached\Client::OPT_READ_TIMEOUT));
        $this->assertTrue($app['cache']->store('tuned')->put('x', str_repeat('a', 5000), 60));
        $this->assertSame(str_repeat('a', 5000), $this->c->get('tuned:x'));
    }

    public function testSeveralServersAndUnixSocket(): void
    {
        $sock = getenv('MDC_TEST_SOCK');
        $this->assertNotEmpty($sock, 'the runner starts the daemon on a Unix socket too (MDC_TEST_SOCK)');
        $app = $this->app(self::cacheConfig(['stores' => ['mdcached' => ['servers' => [
            1 => ['host' => 'unix:' . $sock, 'port' => 0, 'weight' => 100],
        ]]]]));
        $cache = $app['cache']->store('mdcached');
        $this->assertCount(2, $cache->getStore()->getClient()->getServerList());
        for ($i = 0; $i < 20; $i++) {
            $cache->tags('t')->put("k$i", $i, 60);
        }
        $this->assertSame(['k3' => 3, 'k17' => 17], $cache->tags('t')->many(['k3', 'k17']));
        $this->assertSame(3, $cache->tags('t')->get('k3'));
        // both "servers" are the same daemon: the fan-out deletes every record once
        $this->assertTrue($cache->tags('t')->flush());
        $this->assertSame([], $this->c->getByTag('laravel:app_cache::tag:t'));
    }

    public function testProviderRegisteredAfterCacheResolved(): void
    {
        $app = $this->app(self::cacheConfig(), true);
        $this->assertInstanceOf(LaravelStore::class, $app['cache']->store('mdcached')->getStore());
    }

    public function testWithoutTheExtensionAClearError(): void
    {
        // a PHP without the extension (-n: no ini, so no extension=)
        $cmd = escapeshellarg(PHP_BINARY) . ' -n -r ' . escapeshellarg('
            require $argv[1];
            try {
                Mdcached\Cache\LaravelStore::connect(["servers" => [["host" => "127.0.0.1", "port" => 1]]]);
                echo "connected\n";
            } catch (Throwable $e) {
                echo get_class($e), ": ", $e->getMessage(), "\n";
            }') . ' ' . escapeshellarg(__DIR__ . '/bootstrap.php') . ' 2>&1';
        $out = shell_exec($cmd);
        $this->assertStringContainsString('Mdcached\Cache\CacheException: ', $out);
        $this->assertStringContainsString('extension mdcached', $out);
    }

    public function testBadConfigIsAClearError(): void
    {
        $app = $this->app(self::cacheConfig(['stores' => ['empty' => ['driver' => 'mdcached']]]));
        try {
            $app['cache']->store('empty');
            $this->fail('a store without servers must be refused');
        } catch (Mdcached\Cache\CacheException $e) {
            $this->assertStringContainsString('no servers', $e->getMessage());
        }
        $app = $this->app(self::cacheConfig(['stores' => ['bad' => ['driver' => 'mdcached', 'servers' => ['127.0.0.1:11311']]]]));
        try {
            $app['cache']->store('bad');
            $this->fail('a server given as a string must be refused');
        } catch (Mdcached\Cache\CacheException $e) {
            $this->assertStringContainsString("'host' =>", $e->getMessage());
        }
    }
}
