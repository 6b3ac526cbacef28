<?php
namespace Mdcached\Cache;

use Symfony\Component\Cache\Adapter\TagAwareAdapter;
use Symfony\Component\DependencyInjection\Alias;
use Symfony\Component\DependencyInjection\ChildDefinition;
use Symfony\Component\DependencyInjection\Compiler\CompilerPassInterface;
use Symfony\Component\DependencyInjection\ContainerBuilder;
use Symfony\Component\DependencyInjection\Definition;
use Symfony\Component\DependencyInjection\Reference;

/**
 * Runs before FrameworkBundle's CachePoolPass (MdcachedBundle):
 *  - a pool on cache.adapter.mdcached(_stale) whose provider is a DSN
 *    ("mdcached://...", or a value with %env()%) gets a client service made
 *    by SymfonyTagAwareAdapter::createConnection() (Dsn::createClient())
 *    instead of the one CachePoolPass would make with
 *    AbstractAdapter::createConnection(), which knows no mdcached: scheme
 *    ("Unsupported DSN");
 *  - Symfony's TagAwareAdapter wrapped around such a pool (a pool's
 *    "tags: true", the ".<pool>.taggable" service FrameworkBundle makes for
 *    TagAwareCacheInterface autowiring, cache.app.taggable) becomes an
 *    alias of the pool: the adapter is tag-aware itself, and the wrapper's
 *    version keys would cost a request per read.
 */
class MdcachedCachePass implements CompilerPassInterface
{
    public function process(ContainerBuilder $container): void
    {
        foreach ($container->findTaggedServiceIds('cache.pool') as $id => $tags) {
            if (!$this->isMdcachedPool($container, $id)) {
                continue;
            }
            $provider = $tags[0]['provider'] ?? null;
            if (!is_string($provider)) {
                continue;
            }
            $usedEnvs = null;
            $container->resolveEnvPlaceholders($provider, null, $usedEnvs);
            if (!$usedEnvs && !preg_match('#^[a-z]++:#', $provider)) {
                continue; // a service id
            }
            $conn = '.mdcached_connection.' . ContainerBuilder::hash($provider);
            if (!$container->hasDefinition($conn)) {
                $container->setDefinition($conn, (new Definition(\Mdcached\Client::class))
                    ->setFactory([SymfonyTagAwareAdapter::class, 'createConnection'])
                    ->setArguments([$provider])
                    ->setPublic(false));
            }
            $def = $container->getDefinition($id);
            $all = $def->getTags();
            $all['cache.pool'][0]['provider'] = $conn;
            $def->setTags($all);
        }
        foreach ($container->getDefinitions() as $id => $def) {
            if ($def->getClass() !== TagAwareAdapter::class || $def instanceof ChildDefinition) {
                continue;
            }
            $args = $def->getArguments();
            $inner = $args[0] ?? null;
            if (!$inner instanceof Reference || ($args[1] ?? null) !== null
                    || !$this->isMdcachedPool($container, (string)$inner)) {
                continue;
            }
            $public = $def->isPublic();
            $container->removeDefinition($id);
            $container->setAlias($id, new Alias((string)$inner, $public));
        }
    }

    /** A service made from cache.adapter.mdcached(_stale), through aliases and parents. */
    private function isMdcachedPool(ContainerBuilder $container, string $id): bool
    {
        for ($i = 0; $i < 32; $i++) {
            if (isset(MdcachedExtension::ADAPTERS[$id])) {
                return true;
            }
            if ($container->hasAlias($id)) {
                $id = (string)$container->getAlias($id);
                continue;
            }
            if (!$container->hasDefinition($id)) {
                return false;
            }
            $def = $container->getDefinition($id);
            if (!$def instanceof ChildDefinition) {
                return $def->getClass() === SymfonyTagAwareAdapter::class;
            }
            $id = $def->getParent();
        }
        return false;
    }
}
