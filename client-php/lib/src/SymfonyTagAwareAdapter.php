<?php
namespace Mdcached\Cache;

use Mdcached\Client;
use Psr\Cache\CacheItemInterface;
use Symfony\Component\Cache\Adapter\AbstractTagAwareAdapter;
use Symfony\Component\Cache\CacheItem;
use Symfony\Contracts\Cache\ItemInterface;

/**
 * Symfony's TagAwareAdapterInterface and the contracts' TagAwareCacheInterface
 * on mdcached's server tags (symfony/cache 5.4, 6.4 and 7.x: the return
 * types are 7.x's, the parameters 5.4's or wider).  An item's Symfony tags
 * become string tags of its record (tag id "<namespace>:\0tags\0<tag>",
 * hashed as documented in docs/client-php.md), so:
 *   - a read is one get (getMulti for several items): no version keys;
 *   - invalidateTags() is one deleteByTag of all the tags (one request per
 *     server), which deletes the records atomically on the server;
 *   - there is no reverse index to maintain or leak: a record's tags go
 *     with the record, when it is deleted, replaced or expires.
 * With $staleInvalidation, invalidateTags() marks the records stale
 * (deleteByTagStale) instead of deleting them, and get($key, $callback)
 * reads with leaseGet: the one reader per record that wins recomputes and
 * stores, the others are served the stale value meanwhile, across every
 * PHP worker (docs/client-php.md, "Leases").
 * Every record also carries the namespace's tag, so clear() deletes only
 * this namespace.  clear($prefix) clears the whole namespace, as Symfony's
 * adapters with versioning enabled do: the server keeps no key index to
 * find a prefix by.  There is no prune(): the server expires records.
 */
class SymfonyTagAwareAdapter extends AbstractTagAwareAdapter
{
    use FetchTrait;

    /**
     * Symfony's versioning (enableVersioning()) reads static::NS_SEPARATOR,
     * which AbstractAdapter defines and AbstractTagAwareAdapter does not.
     */
    protected const NS_SEPARATOR = ':';

    /** before a Symfony tag in the server's string tags */
    private const TAGS_PREFIX = "\0tags\0";

    private Client $client;
    private string $ns;
    /** the default lifetime (Symfony's own copy is private) */
    private int $lifetime;

    /** invalidateTags() marks stale; get() with a callback leases */
    private bool $stale;

    public function __construct(Client $client, string $namespace = '', int $defaultLifetime = 0,
                                bool $staleInvalidation = false)
    {
        parent::__construct($namespace, $defaultLifetime);
        $this->lifetime = $defaultLifetime;
        $this->client = $client;
        $this->ns = $namespace === '' ? '' : $namespace . ':';
        $this->stale = $staleInvalidation;
    }

    /**
     * The client of a DSN (Dsn::createClient: mdcached://host:port, several
     * hosts, Unix sockets, credentials, TLS, persistent id), for service
     * definitions as Symfony's MemcachedAdapter::createConnection().
     *
     * @param string|string[] $dsn
     */
    public static function createConnection(#[\SensitiveParameter] string|array $dsn, array $options = []): Client
    {
        return Dsn::createClient($dsn, $options);
    }

    /*
     * Symfony checks keys only in assert() (off in production php.ini):
     * check them here, so an int or reserved characters are always refused.
     */
    /*
     * One item read from one GET (or from the record get() read), made as
     * Symfony's createCacheItem makes it; deferred items, versioning or
     * hashed ids take Symfony's path.
     */
    public function getItem($key): CacheItem
    {
        CacheItem::validateKey($key);
        if (($id = $this->plainId($key)) === null) {
            return self::withoutEmptyTags(parent::getItem($key));
        }
        if ($this->prefetched !== null && $this->prefetched[0] === $id) {
            $r = $this->prefetched[1];
            $this->prefetched = null;
        } else {
            $r = $this->fetchLogged([$id], $key);
        }
        return self::makeItem($key, $r[$id] ?? null);
    }

    /**
     * Several items from one getMulti, made as getItem() makes them; a
     * generator of key => item in the order asked, as Symfony's.
     */
    public function getItems(array $keys = []): iterable
    {
        array_map([CacheItem::class, 'validateKey'], $keys);
        $ids = [];
        foreach ($keys as $key) {
            if (($id = $this->plainId($key)) === null) {
                return self::itemsWithoutEmptyTags(parent::getItems($keys));
            }
            $ids[] = $id;
        }
        return $this->generateItems(array_values($keys), $ids, $ids ? $this->fetchLogged($ids, reset($keys)) : []);
    }

    private function generateItems(array $keys, array $ids, array $r): \Generator
    {
        foreach ($keys as $i => $key) {
            yield $key => self::makeItem($key, $r[$ids[$i]] ?? null);
        }
    }

    /** fetchFrom(); a failure is logged, as Symfony's adapters do, and every key a miss */
    private function fetchLogged(array $ids, string $key): array
    {
        try {
            return self::fetchFrom($this->client, $ids);
        } catch (\Exception $e) {
            CacheItem::log($this->logger ?? null, 'Failed to fetch key "{key}": ' . $e->getMessage(),
                           ['key' => $key, 'exception' => $e, 'cache-adapter' => get_debug_type($this)]);
            return [];
        }
    }

    /**
     * The item of a record read (null: a miss), as Symfony's createCacheItem
     * makes it, except that an item without tags carries no METADATA_TAGS:
     * symfony/cache 6.4+ (Psr16Cache::getMultiple(), its value wrapper)
     * wraps the value of any item whose metadata is not empty.
     */
    private static function makeItem(string $key, $v): CacheItem
    {
        static $make = null;
        $make ??= \Closure::bind(static function (string $key, $v, ?array $meta): CacheItem {
            $item = new CacheItem();
            $item->key = $key;
            $item->isTaggable = true;
            if ($meta !== null) {
                $item->isHit = true;
                $item->value = $v['value'];
                $item->metadata = $meta;
            }
            return $item;
        }, null, CacheItem::class);
        return $make($key, $v, is_array($v) && array_key_exists('value', $v) ? self::metadataOf($v) : null);
    }

    /** An item of Symfony's own path without an empty METADATA_TAGS (see makeItem()). */
    private static function withoutEmptyTags(CacheItem $item): CacheItem
    {
        static $strip = null;
        $strip ??= \Closure::bind(static function (CacheItem $item): void {
            if (isset($item->metadata[CacheItem::METADATA_TAGS]) && !$item->metadata[CacheItem::METADATA_TAGS]) {
                unset($item->metadata[CacheItem::METADATA_TAGS]);
            }
        }, null, CacheItem::class);
        $strip($item);
        return $item;
    }

    private static function itemsWithoutEmptyTags(iterable $items): \Generator
    {
        foreach ($items as $key => $item) {
            yield $key => self::withoutEmptyTags($item);
        }
    }

    public function hasItem($key): bool
    {
        CacheItem::validateKey($key);
        return parent::hasItem($key);
    }

    public function deleteItem($key): bool
    {
        CacheItem::validateKey($key);
        return parent::deleteItem($key);
    }

    public function deleteItems(array $keys): bool
    {
        array_map([CacheItem::class, 'validateKey'], $keys);
        return parent::deleteItems($keys);
    }

    /**
     * The contracts' get().  A hit that is not elected for early
     * recomputation is answered here from the one GET, without Symfony's
     * item objects, generators and callbacks (most of the client's CPU per
     * read otherwise); the value, the metadata and the $beta test are
     * Symfony's (ContractsTrait, CacheTrait).  A miss, an early
     * recomputation, deferred items or versioning take Symfony's own path,
     * which finds the record already read instead of asking again.
     * With staleInvalidation the read is a leaseGet: a stale record's
     * winner recomputes (Symfony's path, as an elected early expiration),
     * a stale record another reader is recomputing is served as it is.
     */
    public function get(string $key, callable $callback, ?float $beta = null, ?array &$metadata = null): mixed
    {
        CacheItem::validateKey($key);
        if ($this->plainIds && ($beta ?? 1.0) >= 0.0 && $beta !== INF
                && ($this->maxIdLength === null || strlen($this->ns . $key) <= $this->maxIdLength)) {
            $id = $this->ns . $key;
            $state = 0;
            if ($this->stale && isset($this->won[$id])) {
                // a read of a record this adapter won and is recomputing:
                // Symfony's LockRegistry reads again after waiting for its
                // lock file (held by another worker, for any key of that
                // file), a callback may read its own key.  The server says
                // PENDING (the win is ours); answering the stale value would
                // end the recompute with nothing stored.  A miss: the lock
                // is tried again and the value computed.
                $r = [];
            } else {
                try {
                    $r = $this->stale ? $this->leaseFetch($id, $state) : self::fetchFrom($this->client, [$id]);
                } catch (\Exception $e) {
                    $r = null; // Symfony's path logs it and computes the value
                }
            }
            if ($r !== null) {
                $v = $r[$id] ?? null;
                if (is_array($v) && array_key_exists('value', $v) && $state & Client::LEASE_WIN) {
                    $beta = INF; // this reader recomputes for all
                    $this->won[$id] = true;
                    $winner = $id;
                } elseif (is_array($v) && array_key_exists('value', $v)) {
                    $meta = self::metadataOf($v);
                    if ($state & Client::LEASE_PENDING) {
                        $metadata = $meta; // another reader is recomputing it
                        return $v['value'];
                    }
                    $expiry = $meta[ItemInterface::METADATA_EXPIRY] ?? false;
                    $ctime = $meta[ItemInterface::METADATA_CTIME] ?? false;
                    if (!($ctime && $expiry && $expiry <= microtime(true) - $ctime / 1000 * ($beta ?? 1.0)
                            * log(random_int(1, PHP_INT_MAX) / PHP_INT_MAX))) {
                        $metadata = $meta;
                        return $v['value'];
                    }
                    $beta = INF; // elected: Symfony's path recomputes it
                }
                $this->prefetched = [$id, $r];
            }
        }
        try {
            return parent::get($key, $callback, $beta, $metadata);
        } finally {
            $this->prefetched = null; // commit() (Symfony's getItem() calls it) resets plainIds
            if (isset($winner) && isset($this->won[$winner])) {
                // the winner stored nothing (its callback threw, or chose
                // not to save): hand the win back, so that the next reader
                // recomputes instead of the record staying stale until it
                // expires
                unset($this->won[$winner]);
                try {
                    $this->client->deleteStale($winner);
                } catch (\Throwable $e) {
                    // the server is failing: the record expires as it would
                }
            }
        }
    }

    /**
     * fetchFrom() of one id by leaseGet, its LEASE_* bits in $state; a
     * value that cannot be unserialized is a miss (Symfony's path reads it
     * again and computes).  null: take Symfony's path.
     */
    private function leaseFetch(string $id, int &$state): ?array
    {
        try {
            $v = $this->client->leaseGet($id, 0, 0, $state);
        } catch (\Mdcached\Exception $e) {
            return null;
        } catch (\Throwable $e) {
            $state = 0;
            return null;
        }
        $rc = $this->client->getResultCode();
        if ($rc === Client::RES_SUCCESS) {
            return [$id => $v];
        }
        return $rc === Client::RES_NOTFOUND ? [] : null;
    }

    /** The server key of $key when it is namespace:key (no deferred items, versioning or hashing). */
    private function plainId(string $key): ?string
    {
        if (!$this->plainIds) {
            return null;
        }
        $id = $this->ns . $key;
        return $this->maxIdLength === null || strlen($id) <= $this->maxIdLength ? $id : null;
    }

    /**
     * A record's metadata as Symfony's createCacheItem gives it: tags (when
     * there are any), then expiry and ctime.
     */
    private static function metadataOf(array $v): array
    {
        $meta = [];
        if ($tags = $v['tags'] ?? []) { // none: no METADATA_TAGS (makeItem())
            // 5.4 stores tag => tag, 6.0 and later a list
            $meta[ItemInterface::METADATA_TAGS] = array_is_list($tags) ? array_combine($tags, $tags) : $tags;
        }
        if (isset($v['meta'])) {
            $u = unpack('Ve/Nc', $v['meta']);
            $meta[ItemInterface::METADATA_EXPIRY] = $u['e'] + self::expiryOffset();
            $meta[ItemInterface::METADATA_CTIME] = $u['c'];
        }
        return $meta;
    }

    /** @var bool no deferred item and no versioning: a key's id is namespace:key */
    private bool $plainIds = true;
    private bool $versioning = false;
    /** @var array|null [id, doFetch() answer] read by get() for Symfony's path */
    private ?array $prefetched = null;
    /** @var array<string, true> ids whose lease this adapter won and has not stored yet */
    private array $won = [];

    /**
     * save() with no other item deferred: the record Symfony's commit()
     * would write (value, tags, packed expiry and ctime, as its
     * mergeByLifetime), written at once by doSave(), without the deferred
     * queue and its per-lifetime grouping.  Tags are stored as tag => tag,
     * which every Symfony version reads back.
     */
    public function save(CacheItemInterface $item): bool
    {
        if (!$this->plainIds || !$item instanceof CacheItem) {
            return parent::save($item);
        }
        static $record = null;
        $record ??= \Closure::bind(static function (CacheItem $item, int $defaultLifetime, int $offset): array {
            if (null === $item->expiry) {
                $ttl = 0 < $defaultLifetime ? $defaultLifetime : 0;
            } elseif (!$item->expiry) {
                $ttl = 0;
            } elseif (0 >= $ttl = (int)(0.1 + $item->expiry - microtime(true))) {
                return [(string)$item->key, null, 0];
            }
            $metadata = $item->newMetadata;
            $tags = $metadata[CacheItem::METADATA_TAGS] ?? [];
            unset($metadata[CacheItem::METADATA_TAGS]);
            $value = ['value' => $item->value, 'tags' => $tags];
            if ($metadata) {
                $value['meta'] = pack('VN', (int)(0.1 + $metadata[CacheItem::METADATA_EXPIRY] - $offset),
                                      $metadata[CacheItem::METADATA_CTIME]);
            }
            $item->metadata = $item->newMetadata;
            return [(string)$item->key, $value, $ttl];
        }, null, CacheItem::class);
        [$key, $value, $ttl] = $record($item, $this->lifetime, self::expiryOffset());
        $id = $this->ns . $key;
        if ($this->maxIdLength !== null && strlen($id) > $this->maxIdLength) {
            return parent::save($item);
        }
        try {
            if ($value === null) { // already expired
                return $this->doDelete([$id]);
            }
            return $this->storeOne($id, $value, $ttl);
        } catch (\Exception $e) {
            CacheItem::log($this->logger ?? null, 'Failed to save key "{key}": ' . $e->getMessage(),
                           ['key' => $key, 'exception' => $e, 'cache-adapter' => get_debug_type($this)]);
            return false;
        }
    }

    public function saveDeferred(CacheItemInterface $item): bool
    {
        $this->plainIds = false; // Symfony's path commits first
        return parent::saveDeferred($item);
    }

    public function commit(): bool
    {
        try {
            return parent::commit();
        } finally {
            $this->plainIds = !$this->versioning;
        }
    }

    public function clear(string $prefix = ''): bool
    {
        try {
            return parent::clear($prefix); // drops the deferred items
        } finally {
            $this->plainIds = !$this->versioning;
        }
    }

    public function enableVersioning(bool $enable = true): bool
    {
        $this->versioning = $enable;
        $this->plainIds = $this->plainIds && !$enable;
        return parent::enableVersioning($enable);
    }

    /** CacheItem::METADATA_EXPIRY_OFFSET (private): the base of the packed expiry */
    private static function expiryOffset(): int
    {
        static $o = null;
        return $o ??= (new \ReflectionClassConstant(CacheItem::class, 'METADATA_EXPIRY_OFFSET'))->getValue();
    }

    private function nsTag(): string
    {
        return "mdcached:sfns:{$this->ns}";
    }

    protected function doFetch(array $ids): iterable
    {
        if ($this->prefetched !== null && count($ids) === 1 && reset($ids) === $this->prefetched[0]) {
            $r = $this->prefetched[1];
            $this->prefetched = null;
            return $r;
        }
        return self::fetchFrom($this->client, $ids);
    }

    protected function doHave(string $id): bool
    {
        return (bool)$this->doFetch([$id]);
    }

    /*
     * $namespace is this adapter's namespace followed by clear()'s prefix:
     * with or without a prefix, every record of the namespace goes.
     */
    protected function doClear(string $namespace): bool
    {
        return $this->client->deleteByTag($this->nsTag()) !== false;
    }

    protected function doDelete(array $ids): bool
    {
        foreach ($this->client->deleteMulti(array_values($ids)) as $r) {
            if ($r !== true && $r !== Client::RES_NOTFOUND) {
                return false;
            }
        }
        return true;
    }

    /** doSave() of one record, without its grouping: one set */
    private function storeOne(string $id, array $v, int $lifetime): bool
    {
        $tags = [$this->nsTag ??= $this->nsTag()];
        foreach ($v['tags'] ?? [] as $t) {
            $tags[] = $this->ns . self::TAGS_PREFIX . $t;
        }
        if (!$this->client->set($id, $v, $lifetime > 2592000 ? time() + $lifetime : $lifetime, $tags)) {
            return false;
        }
        unset($this->won[$id]); // a store ends the win (get())
        return true;
    }

    /** nsTag(), kept */
    private ?string $nsTag = null;

    protected function doSave(array $values, int $lifetime, array $addTagData = [], array $removeTagData = []): array
    {
        $failed = [];
        $exp = $lifetime > 2592000 ? time() + $lifetime : $lifetime;
        $nsTag = $this->nsTag();
        // records with the same tag set go out in one setMulti
        $groups = [];
        foreach ($values as $id => $v) {
            $tags = [$nsTag];
            foreach ($v['tags'] ?? [] as $t) {
                $tags[] = $this->ns . self::TAGS_PREFIX . $t;
            }
            $g = implode("\n", $tags);
            $groups[$g][0] = $tags;
            $groups[$g][1][$id] = $v;
        }
        foreach ($groups as [$tags, $items]) {
            if (!$this->client->setMulti($items, $exp, $tags)) {
                foreach ($items as $id => $v) {
                    if (!$this->client->set((string)$id, $v, $exp, $tags)) {
                        $failed[] = $id;
                    }
                }
            }
        }
        if ($this->won) { // a store ends the win (get())
            $f = array_flip($failed);
            foreach ($values as $id => $v) {
                if (!isset($f[$id])) {
                    unset($this->won[$id]);
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
        // one deleteByTag for all the tags, as doSave() named them
        $p = $this->ns . self::parentTagsPrefix();
        $tags = [];
        foreach ($tagIds as $id) {
            $tags[] = strncmp($id, $p, strlen($p)) === 0
                ? $this->ns . self::TAGS_PREFIX . substr($id, strlen($p)) : $id;
        }
        return ($this->stale ? $this->client->deleteByTagStale($tags)
                             : $this->client->deleteByTag($tags)) !== false;
    }

    /*
     * The prefix Symfony's tag ids carry ("\0tags\0" in 5.4, "\1tags\1"
     * since 6.0): the server tags use TAGS_PREFIX whatever the version, so
     * applications on different Symfony versions share their tags.
     */
    private static function parentTagsPrefix(): string
    {
        static $p = null;
        return $p ??= (new \ReflectionClassConstant(AbstractTagAwareAdapter::class, 'TAGS_PREFIX'))->getValue();
    }
}
