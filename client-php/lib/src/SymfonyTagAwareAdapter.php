<?php
namespace Mdcached\Cache;

use Mdcached\Client;
use Symfony\Component\Cache\Adapter\AbstractTagAwareAdapter;
use Symfony\Component\Cache\CacheItem;

/**
 * Symfony's TagAwareAdapterInterface and the contracts' TagAwareCacheInterface
 * on mdcached's server tags.  An item's Symfony tags become string tags of
 * its record (tag id "<namespace>:\0tags\0<tag>", hashed as documented in
 * docs/client-php.md), so:
 *   - a read is one get (getMulti for several items): no version keys;
 *   - invalidateTags() is one deleteByTag of all the tags (one request per
 *     server), which deletes the records atomically on the server;
 *   - there is no reverse index to maintain or leak: a record's tags go
 *     with the record, when it is deleted, replaced or expires.
 * Every record also carries the namespace's tag, so clear() deletes only
 * this namespace.
 */
class SymfonyTagAwareAdapter extends AbstractTagAwareAdapter
{
    private const TAGS_PREFIX = "\0tags\0";

    private Client $client;
    private string $ns;

    public function __construct(Client $client, string $namespace = '', int $defaultLifetime = 0)
    {
        parent::__construct($namespace, $defaultLifetime);
        $this->client = $client;
        $this->ns = $namespace === '' ? '' : $namespace . ':';
    }

    /*
     * Symfony checks keys only in assert() (off in production php.ini):
     * check them here, so reserved characters are always rejected.
     */
    public function getItem($key)
    {
        CacheItem::validateKey($key);
        return parent::getItem($key);
    }

    public function getItems(array $keys = [])
    {
        array_map([CacheItem::class, 'validateKey'], $keys);
        return parent::getItems($keys);
    }

    public function hasItem($key)
    {
        CacheItem::validateKey($key);
        return parent::hasItem($key);
    }

    public function deleteItem($key)
    {
        CacheItem::validateKey($key);
        return parent::deleteItem($key);
    }

    public function deleteItems(array $keys): bool
    {
        array_map([CacheItem::class, 'validateKey'], $keys);
        return parent::deleteItems($keys);
    }

    public function get(string $key, callable $callback, float $beta = null, array &$metadata = null)
    {
        CacheItem::validateKey($key);
        return parent::get($key, $callback, $beta, $metadata);
    }

    private function nsTag(string $namespace): string
    {
        return "mdcached:sfns:$namespace";
    }

    protected function doFetch(array $ids)
    {
        if (!$ids) {
            return [];
        }
        $r = $this->client->getMulti(array_values($ids));
        if ($r === false) {
            throw new CacheException('mdcached: get failed: ' . $this->client->getResultMessage());
        }
        return $r;
    }

    protected function doHave(string $id)
    {
        return (bool)$this->doFetch([$id]);
    }

    protected function doClear(string $namespace)
    {
        if ($namespace !== $this->ns) { // a sub-prefix: not indexed
            return false;
        }
        return $this->client->deleteByTag($this->nsTag($namespace)) !== false;
    }

    protected function doDelete(array $ids)
    {
        foreach ($this->client->deleteMulti(array_values($ids)) as $r) {
            if ($r !== true && $r !== Client::RES_NOTFOUND) {
                return false;
            }
        }
        return true;
    }

    protected function doSave(array $values, int $lifetime, array $addTagData = [], array $removeTagData = []): array
    {
        $failed = [];
        $exp = $lifetime > 2592000 ? time() + $lifetime : $lifetime;
        $nsTag = $this->nsTag($this->ns);
        // records with the same tag set go out in one setMulti
        $groups = [];
        foreach ($values as $id => $v) {
            $tags = [$nsTag];
            foreach ($v['tags'] ?? [] as $t) {
                $tags[] = $this->ns . self::TAGS_PREFIX . $t;
            }
            $groups[implode("\n", $tags)][1][$id] = $v;
            $groups[implode("\n", $tags)][0] = $tags;
        }
        foreach ($groups as [$tags, $items]) {
            if (!$this->client->setMulti($items, $exp, $tags)) {
                foreach ($items as $id => $v) {
                    if (!$this->client->set($id, $v, $exp, $tags)) {
                        $failed[] = $id;
                    }
                }
            }
        }
        return $failed;
    }

    protected function doDeleteYieldTags(array $ids): iterable
    {
        // the server drops a record's tags with it: nothing to yield
        $this->doDelete($ids);
        return [];
    }

    protected function doDeleteTagRelations(array $tagData): bool
    {
        return true; // no relations are kept outside the records
    }

    protected function doInvalidate(array $tagIds): bool
    {
        // one deleteByTag for all the tags: the tag ids are the string tags
        return $this->client->deleteByTag(array_values($tagIds)) !== false;
    }
}
