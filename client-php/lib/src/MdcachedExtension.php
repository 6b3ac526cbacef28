<?php
namespace Mdcached\Cache;

use Mdcached\Client;
use Symfony\Component\DependencyInjection\ContainerBuilder;
use Symfony\Component\DependencyInjection\ContainerInterface;
use Symfony\Component\DependencyInjection\Extension\Extension;
use Symfony\Component\DependencyInjection\Reference;

/**
 * The services of MdcachedBundle:
 *   cache.adapter.mdcached        abstract SymfonyTagAwareAdapter for
 *                                 framework.cache pools (as FrameworkBundle's
 *                                 cache.adapter.memcached);
 *   cache.adapter.mdcached_stale  the same with staleInvalidation;
 *   mdcached.default_connection   the client of pools without a provider,
 *                                 from the parameter mdcached.default_dsn
 *                                 (default mdcached://127.0.0.1:11311).
 * There is no "mdcached:" configuration section: a pool's provider and
 * FrameworkBundle's pool options say everything.
 */
class MdcachedExtension extends Extension
{
    public const ADAPTERS = ['cache.adapter.mdcached' => false, 'cache.adapter.mdcached_stale' => true];

    public function load(array $configs, ContainerBuilder $container): void
    {
        foreach ($configs as $c) {
            if ($c) {
                throw new InvalidArgumentException('mdcached: the bundle has no configuration: give each '
                    . 'framework.cache pool adapter: cache.adapter.mdcached and provider: \'mdcached://...\' '
                    . '(docs/client-php.md, "Symfony")');
            }
        }
        if (!$container->hasParameter('mdcached.default_dsn')) {
            $container->setParameter('mdcached.default_dsn', 'mdcached://127.0.0.1:11311');
        }
        $container->register('mdcached.default_connection', Client::class)
            ->setFactory([SymfonyTagAwareAdapter::class, 'createConnection'])
            ->setArguments(['%mdcached.default_dsn%'])
            ->setPublic(false);
        foreach (self::ADAPTERS as $id => $stale) {
            $container->register($id, SymfonyTagAwareAdapter::class)
                ->setAbstract(true)
                // client, namespace, default lifetime (CachePoolPass sets them), stale
                ->setArguments([new Reference('mdcached.default_connection'), '', 0, $stale])
                ->addMethodCall('setLogger', [new Reference('logger', ContainerInterface::IGNORE_ON_INVALID_REFERENCE)])
                ->addTag('cache.pool', ['provider' => 'mdcached.default_connection',
                                        'clearer' => 'cache.default_clearer', 'reset' => 'reset'])
                ->addTag('monolog.logger', ['channel' => 'cache']);
        }
    }

    public function getAlias(): string
    {
        return 'mdcached';
    }
}
