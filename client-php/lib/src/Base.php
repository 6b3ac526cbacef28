<?php
namespace Mdcached\Cache;

use Mdcached\Client;

/**
 * What the PSR caches share: key checks, TTLs, the namespace.  Every record
 * of a namespace carries the string tag "mdcached:ns:<namespace>", so
 * clear() is one deleteByTag of that tag: only this namespace's records go,
 * atomically, and no index is kept anywhere else.
 */
abstract class Base
{
    /** Characters PSR-6/PSR-16 reserve in keys. */
    public const RESERVED = '{}()/\\@:';

    protected Client $client;
    protected string $ns;
    protected int $defaultTtl;

    public function __construct(Client $client, string $namespace = '', int $defaultTtl = 0)
    {
        if ($namespace !== '' && strpbrk($namespace, self::RESERVED) !== false) {
            throw new InvalidArgumentException("namespace \"$namespace\" contains reserved characters");
        }
        $this->client = $client;
        $this->ns = $namespace;
        $this->defaultTtl = $defaultTtl;
    }

    /** The tag every record of this namespace carries. */
    public function namespaceTag(): string
    {
        return 'mdcached:ns:' . $this->ns;
    }

    protected function id($key): string
    {
        if (!is_string($key) && !is_int($key)) {
            throw new InvalidArgumentException('cache key must be a string, ' . get_debug_type($key) . ' given');
        }
        $key = (string)$key;
        if ($key === '') {
            throw new InvalidArgumentException('cache key must not be empty');
        }
        if (strpbrk($key, self::RESERVED) !== false) {
            throw new InvalidArgumentException("cache key \"$key\" contains reserved characters " . self::RESERVED);
        }
        return $this->ns === '' ? $key : $this->ns . ':' . $key;
    }

    protected function keyOf(string $id): string
    {
        return $this->ns === '' ? $id : substr($id, strlen($this->ns) + 1);
    }

    /**
     * A PSR TTL (null, int seconds, DateInterval) as server expiry: 0 for
     * never, a positive number of seconds, or null when already expired.
     */
    protected function ttl($ttl): ?int
    {
        if ($ttl === null) {
            return $this->defaultTtl;
        }
        if ($ttl instanceof \DateInterval) {
            $now = new \DateTimeImmutable('@0');
            $ttl = $now->add($ttl)->getTimestamp();
        } elseif (!is_int($ttl)) {
            throw new InvalidArgumentException('TTL must be null, an int or a DateInterval, ' . get_debug_type($ttl) . ' given');
        }
        return $ttl > 0 ? $ttl : null;
    }

    /** Server expiry from a relative TTL in seconds: absolute past 30 days. */
    protected static function exptime(int $ttl): int
    {
        return $ttl > 2592000 ? time() + $ttl : $ttl;
    }

    protected function failed(string $what): CacheException
    {
        return new CacheException("mdcached: $what failed: " . $this->client->getResultMessage(),
                                  $this->client->getResultCode());
    }

    /** @param string[] $ids  @return array id => value of the hits */
    protected function fetch(array $ids): array
    {
        if (!$ids) {
            return [];
        }
        $r = $this->client->getMulti(array_values($ids));
        if ($r === false) {
            throw $this->failed('get');
        }
        return $r;
    }

    protected function store(array $values, int $ttl): bool
    {
        return $this->client->setMulti($values, self::exptime($ttl), [$this->namespaceTag()]);
    }

    protected function clearNamespace(): bool
    {
        return $this->client->deleteByTag($this->namespaceTag()) !== false;
    }

    protected function remove(array $ids): bool
    {
        if (!$ids) {
            return true;
        }
        $ok = true;
        foreach ($this->client->deleteMulti(array_values($ids)) as $r) {
            if ($r !== true && $r !== Client::RES_NOTFOUND) {
                $ok = false;
            }
        }
        return $ok;
    }
}
