<?php
namespace Mdcached\Cache;

use Psr\SimpleCache\CacheInterface;

/** PSR-16 over Mdcached\Client. */
class SimpleCache extends Base implements CacheInterface
{
    public function get($key, $default = null)
    {
        $r = $this->fetch([$this->id($key)]);
        return $r ? reset($r) : $default;
    }

    public function set($key, $value, $ttl = null)
    {
        $id = $this->id($key);
        $t = $this->ttl($ttl);
        if ($t === null) {
            return $this->remove([$id]);
        }
        return $this->store([$id => $value], $t);
    }

    public function delete($key)
    {
        return $this->remove([$this->id($key)]);
    }

    public function clear()
    {
        return $this->clearNamespace();
    }

    private static function iter($keys): array
    {
        if ($keys instanceof \Traversable) {
            return iterator_to_array($keys, false);
        }
        if (!is_array($keys)) {
            throw new InvalidArgumentException('keys must be an array or a Traversable');
        }
        return $keys;
    }

    public function getMultiple($keys, $default = null)
    {
        $ids = [];
        foreach (self::iter($keys) as $k) {
            $ids[(string)$k] = $this->id($k);
        }
        $hits = $this->fetch($ids);
        $out = [];
        foreach ($ids as $k => $id) {
            $out[$k] = array_key_exists($id, $hits) ? $hits[$id] : $default;
        }
        return $out;
    }

    public function setMultiple($values, $ttl = null)
    {
        if (!is_array($values) && !$values instanceof \Traversable) {
            throw new InvalidArgumentException('values must be an array or a Traversable');
        }
        $byId = [];
        foreach ($values as $k => $v) {
            $byId[$this->id($k)] = $v;
        }
        $t = $this->ttl($ttl);
        if ($t === null) {
            return $this->remove(array_keys($byId));
        }
        return $byId ? $this->store($byId, $t) : true;
    }

    public function deleteMultiple($keys)
    {
        $ids = [];
        foreach (self::iter($keys) as $k) {
            $ids[] = $this->id($k);
        }
        return $this->remove($ids);
    }

    public function has($key)
    {
        return (bool)$this->fetch([$this->id($key)]);
    }
}
