<?php
namespace Mdcached\Cache;

use Illuminate\Cache\Repository;
use Illuminate\Cache\TaggableStore;
use Illuminate\Contracts\Cache\Store;
use Mdcached\Client;

/**
 * A Laravel cache store (illuminate/cache 8) on mdcached.  tags() returns a
 * repository whose writes attach the tags to the records on the server and
 * whose flush() is one deleteByTag: the tagged records are deleted
 * atomically by the server, with no tag sets or versions to race with.
 * Unlike Laravel's own tagged caches, a key names the same record whatever
 * tags are used to reach it.
 */
class LaravelStore extends TaggableStore implements Store
{
    protected Client $client;
    protected string $prefix;
    /** @var string[] string tags attached by this store's writes */
    protected array $tagNames;

    public function __construct(Client $client, string $prefix = '', array $tagNames = [])
    {
        $this->client = $client;
        $this->prefix = $prefix;
        $this->tagNames = $tagNames;
    }

    protected function tagStrings(): array
    {
        $t = ['laravel:' . $this->prefix];
        foreach ($this->tagNames as $n) {
            $t[] = 'laravel:' . $this->prefix . ':tag:' . $n;
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
        $v = $this->client->get($this->prefix . $key);
        return $v === false && $this->client->getResultCode() !== Client::RES_SUCCESS ? null : $v;
    }

    public function many(array $keys)
    {
        $ids = array_map(fn($k) => $this->prefix . $k, $keys);
        $hits = $ids ? ($this->client->getMulti($ids) ?: []) : [];
        $out = [];
        foreach ($keys as $i => $k) {
            $out[$k] = $hits[$ids[$i]] ?? null;
        }
        return $out;
    }

    public function put($key, $value, $seconds)
    {
        if ((int)$seconds <= 0) {
            return $this->forget($key) || true;
        }
        return $this->client->set($this->prefix . $key, $value, self::exptime($seconds), $this->tagStrings());
    }

    public function putMany(array $values, $seconds)
    {
        $items = [];
        foreach ($values as $k => $v) {
            $items[$this->prefix . $k] = $v;
        }
        return $this->client->setMulti($items, self::exptime($seconds), $this->tagStrings());
    }

    public function add($key, $value, $seconds)
    {
        return $this->client->add($this->prefix . $key, $value, self::exptime($seconds), $this->tagStrings());
    }

    public function increment($key, $value = 1)
    {
        return $this->client->increment($this->prefix . $key, $value);
    }

    public function decrement($key, $value = 1)
    {
        return $this->client->decrement($this->prefix . $key, $value);
    }

    public function forever($key, $value)
    {
        return $this->client->set($this->prefix . $key, $value, 0, $this->tagStrings());
    }

    public function forget($key)
    {
        return $this->client->delete($this->prefix . $key);
    }

    /** Untagged store: every record of this prefix; tagged: the tags' records. */
    public function flush()
    {
        $tags = $this->tagNames ? array_slice($this->tagStrings(), 1) : ['laravel:' . $this->prefix];
        return $this->client->deleteByTag($tags) !== false;
    }

    public function getPrefix()
    {
        return $this->prefix;
    }

    public function tags($names)
    {
        $names = is_array($names) ? $names : func_get_args();
        return new Repository(new static($this->client, $this->prefix, array_values(array_unique(array_merge($this->tagNames, $names)))));
    }
}
