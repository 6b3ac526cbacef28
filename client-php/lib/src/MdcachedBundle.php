<?php
namespace Mdcached\Cache;

use Symfony\Component\DependencyInjection\Compiler\PassConfig;
use Symfony\Component\DependencyInjection\ContainerBuilder;
use Symfony\Component\DependencyInjection\Extension\ExtensionInterface;
use Symfony\Component\HttpKernel\Bundle\Bundle;

/**
 * The Symfony bundle of mdcached/cache: framework.cache pools on mdcached
 * with one line each,
 *
 *     framework:
 *         cache:
 *             pools:
 *                 app.tagged:
 *                     adapter: cache.adapter.mdcached        # or cache.adapter.mdcached_stale
 *                     provider: 'mdcached://127.0.0.1:11311' # any DSN of Dsn::createClient(), or %env(...)%
 *
 * MdcachedExtension defines the abstract adapters and the default client;
 * MdcachedCachePass (before FrameworkBundle's CachePoolPass) turns a DSN
 * provider into a client service and unwraps Symfony's TagAwareAdapter
 * around these pools (the adapter is tag-aware itself).  Only the bundle
 * APIs symfony/http-kernel and dependency-injection share from 5.4 to 7.x
 * are used (Bundle, Extension, compiler passes; not AbstractBundle, 6.1+).
 */
class MdcachedBundle extends Bundle
{
    public function build(ContainerBuilder $container): void
    {
        parent::build($container);
        // FrameworkBundle's CachePoolPass is TYPE_BEFORE_OPTIMIZATION, 32
        $container->addCompilerPass(new MdcachedCachePass(), PassConfig::TYPE_BEFORE_OPTIMIZATION, 40);
    }

    public function getContainerExtension(): ?ExtensionInterface
    {
        return $this->extension ??= new MdcachedExtension();
    }
}
