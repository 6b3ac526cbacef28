<?php
namespace Mdcached\Cache;

use Illuminate\Support\ServiceProvider;

/**
 * Registers the "mdcached" cache driver (Laravel 8 to 12).  A store of
 * config/cache.php:
 *
 *     'mdcached' => [
 *         'driver' => 'mdcached',
 *         'servers' => [['host' => '127.0.0.1', 'port' => 11311, 'weight' => 100]],
 *         'persistent_id' => null, 'options' => [], 'sasl' => [], 'tls' => [],
 *         'prefix' => 'app_cache',       // default: cache.prefix
 *     ],
 *
 * The driver is added to the cache manager when the container resolves
 * "cache" (or at once if it already has), so it exists before any other
 * provider's boot() uses the cache.
 */
class LaravelServiceProvider extends ServiceProvider
{
    public function register()
    {
        $this->callAfterResolving('cache', function ($manager) {
            $this->extendCache($manager);
        });
    }

    /**
     * Add the driver to an Illuminate\Cache\CacheManager.  (Not static:
     * the manager binds the creator closure to itself, which a closure made
     * in a static method refuses.)
     */
    public function extendCache($manager): void
    {
        $manager->extend('mdcached', function ($app, array $config) use ($manager) {
            $prefix = $config['prefix'] ?? $app['config']['cache.prefix'] ?? '';
            $store = new LaravelStore(LaravelStore::connect($config), (string)$prefix);
            return $manager->repository($store, $config);
        });
    }
}
