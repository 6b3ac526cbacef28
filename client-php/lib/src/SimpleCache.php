<?php
namespace Mdcached\Cache;

use Psr\SimpleCache\CacheInterface;

/** PSR-16 over Mdcached\Client (psr/simple-cache 1.0 to 3.0: see Base). */
class SimpleCache extends Base implements CacheInterface
{
    public function get($key, $default = null): mixed
    {
        $id = $this->id($key);
        $r = $this->fetch([$id]);
        return array_key_exists($id, $r) ? $r[$id] : $default;
    }

    public function set($key, $value, $ttl = null): bool
    {
        $id = $this->id($key);
        $t = $this->ttl($ttl);
        if ($t === null) {
            return $this->remove([$id]);
        }
        return $this->store([$id => $value], $t);
    }

    public function delete($key): bool
    {
        return $this->remove([$this->id($key)]);
    }

    public function clear(): bool
    {
        return $this->clearNamespace();
    }

    private static function iter($keys): iterable
    {
        if (!is_array($keys) && !$keys instanceof \Traversable) {
            throw new InvalidArgumentException('keys must be an array or a Traversable, ' . get_debug_type($keys) . ' given');
        }
        return $keys;
    }

    /**
     * key => value, in the order asked, as a generator: the keys stay
     * strings ("123" too, which an array would turn into an int).
     */
    public function getMultiple($keys, $default = null): iterable
    {
        $ids = $this->ids(self::iter($keys));
        $hits = $this->fetch(array_column($ids, 1));
        return self::values($ids, $hits, $default);
    }

    private static function values(array $ids, array $hits, $default): \Generator
    {
        foreach ($ids as [$k, $id]) {
            yield $k => array_key_exists($id, $hits) ? $hits[$id] : $default;
        }
    }

    public function setMultiple($values, $ttl = null): bool
    {
        if (!is_array($values) && !$values instanceof \Traversable) {
            throw new InvalidArgumentException('values must be an array or a Traversable, ' . get_debug_type($values) . ' given');
        }
        $byId = [];
        foreach ($values as $k => $v) {
            // an array turns the key "123" into 123: that int is a string key
            $byId[$this->id(is_int($k) && is_array($values) ? (string)$k : $k)] = $v;
        }
        $t = $this->ttl($ttl);
        if ($t === null) {
            return $this->remove(array_keys($byId));
        }
        return $byId ? $this->store($byId, $t) : true;
    }

    public function deleteMultiple($keys): bool
    {
        return $this->remove(array_column($this->ids(self::iter($keys)), 1));
    }

    public function has($key): bool
    {
        $id = $this->id($key);
        return array_key_exists($id, $this->fetch([$id]));
    }
}
