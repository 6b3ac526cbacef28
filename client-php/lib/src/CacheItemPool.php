<?php
namespace Mdcached\Cache;

use Psr\Cache\CacheItemInterface;
use Psr\Cache\CacheItemPoolInterface;

/**
 * PSR-6 over Mdcached\Client (deferred saves go out in one setMulti per TTL).
 * psr/cache 1.0 to 3.0: see Base.
 */
class CacheItemPool extends Base implements CacheItemPoolInterface
{
    /** @var CacheItem[] key => item (the key of an item is $item->getKey()) */
    private array $deferred = [];

    public function getItem($key): CacheItemInterface
    {
        foreach ($this->getItems([$key]) as $item) {
            return $item;
        }
        throw new \LogicException('unreachable');
    }

    /**
     * key => CacheItem, in the order asked, as a generator: the keys stay
     * strings ("123" too, which an array would turn into an int).
     */
    public function getItems(array $keys = []): iterable
    {
        $ids = $this->ids($keys);
        // deferred items read back from memory until commit()
        $found = [];
        $ask = [];
        $now = microtime(true);
        foreach ($ids as $i => [$k, $id]) {
            if (isset($this->deferred[$k])) {
                [$value, $expiry] = $this->deferred[$k]->pending();
                if ($expiry === null || $expiry > $now) {
                    $found[$i] = new CacheItem($k, $value, true);
                    continue;
                }
            }
            $ask[] = $id;
        }
        $hits = $this->fetch($ask);
        return self::items($ids, $found, $hits);
    }

    private static function items(array $ids, array $found, array $hits): \Generator
    {
        foreach ($ids as $i => [$k, $id]) {
            yield $k => $found[$i] ?? (array_key_exists($id, $hits) ? new CacheItem($k, $hits[$id], true)
                                                                     : new CacheItem($k));
        }
    }

    public function hasItem($key): bool
    {
        return $this->getItem($key)->isHit();
    }

    public function clear(): bool
    {
        $this->deferred = [];
        return $this->clearNamespace();
    }

    public function deleteItem($key): bool
    {
        return $this->deleteItems([$key]);
    }

    public function deleteItems(array $keys): bool
    {
        $ids = [];
        foreach ($this->ids($keys) as [$k, $id]) {
            $ids[] = $id;
            unset($this->deferred[$k]);
        }
        return $this->remove($ids);
    }

    public function save(CacheItemInterface $item): bool
    {
        return $this->saveDeferred($item) && $this->commit();
    }

    public function saveDeferred(CacheItemInterface $item): bool
    {
        if (!$item instanceof CacheItem) {
            throw new InvalidArgumentException('items must come from this pool');
        }
        $this->id($item->getKey());
        $this->deferred[$item->getKey()] = $item;
        return true;
    }

    public function commit(): bool
    {
        $byTtl = [];
        $expired = [];
        $now = microtime(true);
        foreach ($this->deferred as $item) {
            [$value, $expiry] = $item->pending();
            $id = $this->id($item->getKey());
            if ($expiry === null) {
                $ttl = $this->defaultTtl;
            } else {
                $ttl = (int)ceil($expiry - $now);
                if ($ttl <= 0) {
                    $expired[] = $id;
                    continue;
                }
            }
            $byTtl[$ttl][$id] = $value;
        }
        $this->deferred = [];
        $ok = $this->remove($expired);
        foreach ($byTtl as $ttl => $values) {
            $ok = $this->store($values, $ttl) && $ok;
        }
        return $ok;
    }

    public function __destruct()
    {
        if ($this->deferred) {
            $this->commit();
        }
    }
}
