<?php
namespace Mdcached\Cache;

use Psr\Cache\CacheItemInterface;
use Psr\Cache\CacheItemPoolInterface;

/** PSR-6 over Mdcached\Client (deferred saves go out in one setMulti per TTL). */
class CacheItemPool extends Base implements CacheItemPoolInterface
{
    /** @var CacheItem[] */
    private array $deferred = [];

    public function getItem($key)
    {
        return $this->getItems([$key])[(string)$key];
    }

    public function getItems(array $keys = [])
    {
        $ids = [];
        foreach ($keys as $k) {
            $ids[(string)$k] = $this->id($k);
        }
        // deferred items read back from memory until commit()
        $out = [];
        $now = microtime(true);
        foreach ($ids as $k => $id) {
            if (isset($this->deferred[$k])) {
                [$value, $expiry] = $this->deferred[$k]->pending();
                if ($expiry === null || $expiry > $now) {
                    $out[$k] = new CacheItem((string)$k, $value, true);
                    unset($ids[$k]);
                }
            }
        }
        $hits = $this->fetch($ids);
        foreach ($ids as $k => $id) {
            $out[$k] = array_key_exists($id, $hits) ? new CacheItem((string)$k, $hits[$id], true)
                                                    : new CacheItem((string)$k);
        }
        return $out;
    }

    public function hasItem($key)
    {
        return $this->getItem($key)->isHit();
    }

    public function clear()
    {
        $this->deferred = [];
        return $this->clearNamespace();
    }

    public function deleteItem($key)
    {
        return $this->deleteItems([$key]);
    }

    public function deleteItems(array $keys)
    {
        $ids = [];
        foreach ($keys as $k) {
            $ids[] = $this->id($k);
            unset($this->deferred[(string)$k]);
        }
        return $this->remove($ids);
    }

    public function save(CacheItemInterface $item)
    {
        return $this->saveDeferred($item) && $this->commit();
    }

    public function saveDeferred(CacheItemInterface $item)
    {
        if (!$item instanceof CacheItem) {
            throw new InvalidArgumentException('items must come from this pool');
        }
        $this->id($item->getKey());
        $this->deferred[$item->getKey()] = $item;
        return true;
    }

    public function commit()
    {
        $byTtl = [];
        $expired = [];
        $now = microtime(true);
        foreach ($this->deferred as $k => $item) {
            [$value, $expiry] = $item->pending();
            if ($expiry === null) {
                $ttl = $this->defaultTtl;
            } else {
                $ttl = (int)ceil($expiry - $now);
                if ($ttl <= 0) {
                    $expired[] = $this->id($k);
                    continue;
                }
            }
            $byTtl[$ttl][$this->id($k)] = $value;
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
