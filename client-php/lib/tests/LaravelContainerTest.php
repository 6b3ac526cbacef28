<?php
use Illuminate\Cache\CacheServiceProvider;
use Illuminate\Support\Facades\Cache;
use Illuminate\Support\Facades\Facade;
use Mdcached\Cache\LaravelServiceProvider;
use PHPUnit\Framework\TestCase;

require_once __DIR__ . '/LaravelProviderChecks.php';

/**
 * The service provider in Laravel's real container (Debian's
 * php-illuminate-container, Laravel 8) with Illuminate\Config\Repository
 * (php-illuminate-config) and Laravel's CacheServiceProvider, and the Cache
 * facade, as an application boots them.
 *
 * @group illuminate-container
 */
final class LaravelContainerTest extends TestCase
{
    use LaravelProviderChecks;

    public static function setUpBeforeClass(): void
    {
        // the Debian set's autoloaders of the container and the config
        foreach (['Illuminate/Container/autoload.php', 'Illuminate/Config/autoload.php'] as $f) {
            if (stream_resolve_include_path($f)) {
                require_once $f;
            }
        }
    }

    private function app(array $cacheConfig, bool $resolveFirst = false): Illuminate\Container\Container
    {
        $app = new Illuminate\Container\Container();
        $app->instance('config', new Illuminate\Config\Repository(['cache' => $cacheConfig]));
        (new CacheServiceProvider($app))->register();
        if ($resolveFirst) {
            $app->make('cache');
        }
        (new LaravelServiceProvider($app))->register();
        Facade::clearResolvedInstances();
        Facade::setFacadeApplication($app);
        return $app;
    }

    public function testFacade(): void
    {
        $this->app(self::cacheConfig());
        $this->assertTrue(Cache::put('f', 'facade', 60));
        $this->assertSame('facade', $this->c->get('app_cache:f'));
        $this->assertInstanceOf(Illuminate\Cache\TaggedCache::class, Cache::tags(['a', 'b']));
        Cache::tags(['a', 'b'])->put('t', 1, 60);
        $this->assertSame(1, Cache::tags(['a', 'b'])->get('t'));
        $this->assertTrue(Cache::tags('a')->flush());
        $this->assertNull(Cache::get('t'));
        $this->assertSame('locked', Cache::lock('l', 5)->get(fn() => 'locked'));
        $this->assertSame(2, Cache::increment('n', 2));
        $this->assertSame('r', Cache::store('mdcached')->rememberForever('r', fn() => 'r'));
    }
}
