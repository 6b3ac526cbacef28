<?php
namespace Mdcached\Cache;

use Illuminate\Cache\TaggableStore;
use Illuminate\Contracts\Cache\LockProvider;
use Illuminate\Contracts\Cache\Store;
use Mdcached\Client;

/**
 * A Laravel cache store (illuminate/cache 8 to 12) on mdcached, registered
 * as the "mdcached" driver by LaravelServiceProvider.
 *
 * Every record written through the store carries the string tag
 * "laravel:<prefix>", so flush() is one deleteByTag that removes this
 * prefix's records only.  tags() returns a LaravelTaggedCache whose writes
 * also carry "laravel:<prefix>:tag:<name>" for each tag and whose flush() is
 * one deleteByTag of those tags: the server deletes the tagged records
 * atomically, with no tag sets or version keys to race with.  As on
 * Laravel's own stores, the tagged cache scopes its keys by the tag names
 * in their order (LaravelTaggedCache).
 *
 * With $staleInvalidation (config "stale_invalidation"), a tagged flush()
 * marks the records stale (deleteByTagStale) instead of deleting them, and
 * reads are leaseGets: the one reader per record that wins sees a miss, so
 * remember() recomputes and stores it; the others get the stale value
 * meanwhile, across every PHP worker (docs/client-php.md, "Leases").
 *
 * The store is a LockProvider (LaravelLock: add to acquire, compare and
 * delete to release).
 */
class LaravelStore extends TaggableStore implements Store, LockProvider
{
    protected Client $client;
    /** The key prefix, ending in ":" unless empty (as Laravel's stores). */
    protected string $prefix = '';
    /** @var string[] tag names attached by this store's writes */
    protected array $tagNames;

    /** tagged flushes mark stale, reads lease */
    protected bool $stale;

    public function __construct(Client $client, string $prefix = '', array $tagNames = [],
                                bool $staleInvalidation = false)
    {
        $this->client = $client;
        $this->setPrefix($prefix);
        $this->tagNames = array_values($tagNames);
        $this->stale = $staleInvalidation;
    }

    public function setStaleInvalidation(bool $on): void
    {
        $this->stale = $on;
    }

    public function getStaleInvalidation(): bool
    {
        return $this->stale;
    }

    /**
     * A client from a config/cache.php store entry: servers (a list of
     * ['host' => ..., 'port' => 11311, 'weight' => 0]; a host starting
     * with "/" or "unix:" is a Unix socket), persistent_id, options
     * (Client::OPT_* => value), sasl ([user, password]) and tls (the
     * options of Client::setTls()).
     */
    public static function connect(array $config): Client
    {
        if (!extension_loaded('mdcached')) {
            throw new CacheException('the mdcached cache driver needs the PHP extension mdcached (ext-mdcached, Debian package php-mdcached)');
        }
        $pid = $config['persistent_id'] ?? null;
        $c = $pid !== null && $pid !== '' ? new Client((string)$pid) : new Client();
        if (!empty($config['options']) && !$c->setOptions($config['options'])) {
            throw new CacheException('mdcached: options: ' . $c->getResultMessage());
        }
        if (!empty($config['sasl'][0])) {
            $c->setSaslAuthData((string)$config['sasl'][0], (string)($config['sasl'][1] ?? ''));
        }
        if (!empty($config['tls']) && !$c->setTls((array)$config['tls'])) {
            throw new CacheException('mdcached: tls: ' . $c->getResultMessage());
        }
        $servers = $config['servers'] ?? [];
        if (!$servers) {
            throw new CacheException('mdcached: the store has no servers (config cache.stores.*.servers)');
        }
        foreach ($servers as $s) {
            if (!is_array($s) || !isset($s['host'])) {
                throw new CacheException('mdcached: a server is [\'host\' => ..., \'port\' => ..., \'weight\' => ...]');
            }
            if (!$c->addServer((string)$s['host'], (int)($s['port'] ?? 11311), (int)($s['weight'] ?? 0))) {
                throw new CacheException('mdcached: server ' . $s['host'] . ': ' . $c->getResultMessage());
            }
        }
        return $c;
    }

    /** The string tag of a tag name (what tagged writes attach). */
    public function tagId(string $name): string
    {
        return 'laravel:' . $this->prefix . ':tag:' . $name;
    }

    /** The string tag every record of this store carries. */
    public function prefixTag(): string
    {
        return 'laravel:' . $this->prefix;
    }

    protected function tagStrings(): array
    {
        $t = [$this->prefixTag()];
        foreach ($this->tagNames as $n) {
            $t[] = $this->tagId($n);
        }
        return $t;
    }

    protected static function exptime($seconds): int
    {
        $s = (int)$seconds;
        return $s > 2592000 ? time() + $s : $s;
    }

    public function get($key)
    {
        if ($this->stale && !self::isFlexibleCreated((string)$key)) {
            return $this->leaseGet($key);
        }
        $v = $this->client->get($this->prefix . $key);
        return $v === false && $this->client->getResultCode() !== Client::RES_SUCCESS ? null : $v;
    }

    /**
     * flexible()'s "created" records are read plainly: its value record's
     * lease decides who recomputes, and a stale value keeps its creation
     * time, so flexible() serves it as it serves any value.
     */
    private const FLEXIBLE_CREATED = 'illuminate:cache:flexible:created:';

    /**
     * A flexible() "created" key, as it is (Repository::many() passes keys
     * unscoped) or scoped by a tagged cache ("<sha1 of the tags>:" first).
     */
    private static function isFlexibleCreated(string $key): bool
    {
        return strncmp($key, self::FLEXIBLE_CREATED, strlen(self::FLEXIBLE_CREATED)) === 0
            || (strlen($key) > 41 && $key[40] === ':'
                && substr_compare($key, self::FLEXIBLE_CREATED, 41, strlen(self::FLEXIBLE_CREATED)) === 0);
    }

    /**
     * The read of stale mode: the winner of a stale record (the one reader
     * to recompute it) gets a miss, the others its value.
     */
    protected function leaseGet($key)
    {
        $v = $this->client->leaseGet($this->prefix . $key, 0, 0, $state);
        if ($this->client->getResultCode() !== Client::RES_SUCCESS || $state & Client::LEASE_WIN) {
            return null;
        }
        return $v;
    }

    public function many(array $keys)
    {
        if ($this->stale) {
            $out = [];
            foreach ($keys as $k) {
                $out[$k] = $this->get($k);
            }
            return $out;
        }
        $ids = [];
        foreach ($keys as $k) {
            $ids[] = $this->prefix . $k;
        }
        $hits = $ids ? ($this->client->getMulti($ids) ?: []) : [];
        $out = [];
        foreach (array_values($keys) as $i => $k) {
            $out[$k] = $hits[$ids[$i]] ?? null;
        }
        return $out;
    }

    public function put($key, $value, $seconds)
    {
        if ((int)$seconds <= 0) {
            $this->forget($key);
            return true;
        }
        return $this->client->set($this->prefix . $key, $value, self::exptime($seconds), $this->tagStrings());
    }

    public function putMany(array $values, $seconds)
    {
        if ((int)$seconds <= 0) {
            foreach (array_keys($values) as $k) {
                $this->forget($k);
            }
            return true;
        }
        $items = [];
        foreach ($values as $k => $v) {
            $items[$this->prefix . $k] = $v;
        }
        return $items ? $this->client->setMulti($items, self::exptime($seconds), $this->tagStrings()) : true;
    }

    public function add($key, $value, $seconds)
    {
        return $this->client->add($this->prefix . $key, $value, self::exptime($seconds), $this->tagStrings());
    }

    /**
     * A missing counter is created with $value (carrying the store's tags),
     * as Laravel's array and Redis stores do; a negative $value decrements.
     */
    public function increment($key, $value = 1)
    {
        $value = (int)$value;
        return $value < 0 ? $this->counter($key, -$value, false) : $this->counter($key, $value, true);
    }

    /**
     * Counters are unsigned, as memcached's: a decrement stops at 0, and a
     * missing counter is created at 0.
     */
    public function decrement($key, $value = 1)
    {
        $value = (int)$value;
        return $value < 0 ? $this->counter($key, -$value, true) : $this->counter($key, $value, false);
    }

    /** incr/decr; a miss adds the record with the tags (a lost race retries once). */
    protected function counter($key, int $by, bool $up)
    {
        $id = $this->prefix . $key;
        for ($try = 0; $try < 2; $try++) {
            $r = $up ? $this->client->increment($id, $by) : $this->client->decrement($id, $by);
            if ($r !== false || $this->client->getResultCode() !== Client::RES_NOTFOUND) {
                return $r;
            }
            $init = $up ? $by : 0;
            if ($this->client->add($id, $init, 0, $this->tagStrings())) {
                return $init;
            }
            if ($this->client->getResultCode() !== Client::RES_DATA_EXISTS) {
                return false;
            }
        }
        return false;
    }

    public function forever($key, $value)
    {
        return $this->client->set($this->prefix . $key, $value, 0, $this->tagStrings());
    }

    public function forget($key)
    {
        return $this->client->delete($this->prefix . $key);
    }

    /**
     * Untagged store: every record of this prefix (locks excepted: they
     * carry no tag); tagged: the records carrying any of the tags.
     */
    public function flush()
    {
        if (!$this->tagNames) {
            return $this->deleteTags([$this->prefixTag()], false); // a flush clears, stale mode or not
        }
        return $this->deleteTags(array_slice($this->tagStrings(), 1));
    }

    /**
     * One deleteByTag of the given string tags (every server in parallel);
     * deleteByTagStale with $stale, by default in stale mode.
     */
    public function deleteTags(array $tags, ?bool $stale = null): bool
    {
        if (!$tags) {
            return true;
        }
        return (($stale ?? $this->stale) ? $this->client->deleteByTagStale(array_values($tags))
                                          : $this->client->deleteByTag(array_values($tags))) !== false;
    }

    public function getPrefix()
    {
        return $this->prefix;
    }

    public function setPrefix($prefix)
    {
        $this->prefix = (string)$prefix !== '' ? $prefix . ':' : '';
    }

    public function getClient(): Client
    {
        return $this->client;
    }

    /** @return string[] the tag names this store's writes attach */
    public function getTagNames(): array
    {
        return $this->tagNames;
    }

    /** @return LaravelTaggedCache */
    public function tags($names)
    {
        $names = array_values(is_array($names) ? $names : func_get_args());
        $store = clone $this;
        $store->tagNames = array_values(array_unique(array_merge($this->tagNames, $names)));
        return new LaravelTaggedCache($store, new LaravelTagSet($store, $store->tagNames));
    }

    public function lock($name, $seconds = 0, $owner = null)
    {
        return new LaravelLock($this->client, $this->prefix . $name, (int)$seconds, $owner);
    }

    public function restoreLock($name, $owner)
    {
        return $this->lock($name, 0, $owner);
    }
}
