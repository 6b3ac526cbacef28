<?php
namespace Mdcached\Cache;

use Mdcached\Client;

/**
 * What the PSR caches share: key checks, TTLs, the namespace.  Every record
 * of a namespace carries the string tag "mdcached:ns:<namespace>", so
 * clear() is one deleteByTag of that tag: only this namespace's records go,
 * atomically, and no index is kept anywhere else.
 *
 * The classes load under psr/cache and psr/simple-cache 1.0, 2.0 and 3.0:
 * their methods have the return types 3.0 requires (1.0 and 2.0 have none,
 * and a child may add them) and no parameter types where 1.0 had none (2.0
 * and 3.0 type them, and a child may widen); the values are checked here.
 */
abstract class Base
{
    use FetchTrait;

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

    /** Check a key (a non-empty string without reserved characters): its server key. */
    protected function id($key): string
    {
        if (!is_string($key)) {
            // PSR-6 and PSR-16: "a string"; an int is refused, not cast
            throw new InvalidArgumentException('cache key must be a string, ' . get_debug_type($key) . ' given');
        }
        if ($key === '') {
            throw new InvalidArgumentException('cache key must not be empty');
        }
        if (strpbrk($key, self::RESERVED) !== false) {
            throw new InvalidArgumentException("cache key \"$key\" contains reserved characters " . self::RESERVED);
        }
        return $this->ns === '' ? $key : $this->ns . ':' . $key;
    }

    /**
     * Check every key before anything is read: [[key, id], ...] in order.
     * A list, not a key => id map: PHP would turn the key "123" into 123.
     */
    protected function ids(iterable $keys): array
    {
        $out = [];
        foreach ($keys as $k) {
            $out[] = [$k, $this->id($k)];
        }
        return $out;
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
        return self::fetchFrom($this->client, $ids);
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
