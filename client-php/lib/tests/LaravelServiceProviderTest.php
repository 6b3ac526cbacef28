<?php
use Illuminate\Cache\CacheServiceProvider;
use Mdcached\Cache\LaravelServiceProvider;
use PHPUnit\Framework\TestCase;

require_once __DIR__ . '/LaravelProviderChecks.php';

/**
 * The service provider in a small stand-in container (the laravel11 and
 * laravel12 sets have no illuminate/container; LaravelContainerTest runs
 * the same checks in Debian's real one).  The stand-in has what Laravel's
 * CacheServiceProvider, CacheManager and ServiceProvider::callAfterResolving
 * use: singleton, make, bound, resolved, afterResolving, array access;
 * config is read with dotted keys as Illuminate\Config\Repository does.
 *
 * @group laravel
 */
final class LaravelServiceProviderTest extends TestCase
{
    use LaravelProviderChecks;

    private function app(array $cacheConfig, bool $resolveFirst = false): MdcStandInContainer
    {
        $app = new MdcStandInContainer();
        $app->instance('config', new MdcStandInConfig(['cache' => $cacheConfig]));
        (new CacheServiceProvider($app))->register();
        if ($resolveFirst) {
            $app->make('cache');
        }
        (new LaravelServiceProvider($app))->register();
        return $app;
    }

    public function testStandInResolvesCallbacksOnce(): void
    {
        $app = new MdcStandInContainer();
        $n = 0;
        $app->singleton('x', function () use (&$n) { return new ArrayObject([++$n]); });
        $seen = [];
        $app->afterResolving('x', function ($o) use (&$seen) { $seen[] = $o[0]; });
        $this->assertFalse($app->resolved('x'));
        $this->assertSame($app['x'], $app->make('x'));
        $this->assertTrue($app->resolved('x'));
        $this->assertSame([1], $seen);
    }
}

/** See LaravelServiceProviderTest. */
final class MdcStandInContainer implements ArrayAccess
{
    private array $factories = [];
    private array $instances = [];
    private array $after = [];

    public function singleton($abstract, $concrete = null): void
    {
        $this->factories[$abstract] = $concrete;
    }

    public function instance($abstract, $instance)
    {
        return $this->instances[$abstract] = $instance;
    }

    public function bound($abstract): bool
    {
        return isset($this->factories[$abstract]) || isset($this->instances[$abstract]);
    }

    public function resolved($abstract): bool
    {
        return isset($this->instances[$abstract]);
    }

    public function afterResolving($abstract, $callback = null): void
    {
        $this->after[$abstract][] = $callback;
    }

    public function make($abstract, array $parameters = [])
    {
        if (!isset($this->instances[$abstract])) {
            if (!isset($this->factories[$abstract])) {
                throw new RuntimeException("stand-in container: nothing bound to $abstract");
            }
            $this->instances[$abstract] = ($this->factories[$abstract])($this, $parameters);
            foreach ($this->after[$abstract] ?? [] as $cb) {
                $cb($this->instances[$abstract], $this);
            }
        }
        return $this->instances[$abstract];
    }

    public function offsetExists($key): bool
    {
        return $this->bound($key);
    }

    public function offsetGet($key): mixed
    {
        return $this->make($key);
    }

    public function offsetSet($key, $value): void
    {
        $this->instance($key, $value);
    }

    public function offsetUnset($key): void
    {
        unset($this->factories[$key], $this->instances[$key]);
    }
}

/** Config read with dotted keys ("cache.stores.mdcached"). */
final class MdcStandInConfig implements ArrayAccess
{
    public function __construct(private array $items)
    {
    }

    public function get($key, $default = null)
    {
        return Illuminate\Support\Arr::get($this->items, $key, $default);
    }

    public function offsetExists($key): bool
    {
        return Illuminate\Support\Arr::has($this->items, $key);
    }

    public function offsetGet($key): mixed
    {
        return $this->get($key);
    }

    public function offsetSet($key, $value): void
    {
        Illuminate\Support\Arr::set($this->items, $key, $value);
    }

    public function offsetUnset($key): void
    {
        Illuminate\Support\Arr::forget($this->items, $key);
    }
}
