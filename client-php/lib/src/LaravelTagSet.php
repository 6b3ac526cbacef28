<?php
namespace Mdcached\Cache;

use Illuminate\Cache\TagSet;

/**
 * The tag set of a LaravelTaggedCache.  Laravel's TagSet keeps a random id
 * per tag in the cache and namespaces the keys with them, so that a reset
 * orphans the old keys; here a tag is a server tag on the records
 * themselves ("laravel:<prefix>:tag:<name>"), so there is nothing to read
 * before a tagged get and a reset deletes the records, one deleteByTag for
 * all the set's tags.
 */
class LaravelTagSet extends TagSet
{
    /** @var LaravelStore */
    protected $store;

    public function __construct(LaravelStore $store, array $names = [])
    {
        parent::__construct($store, $names);
    }

    /** Delete every record carrying any of the tags (one server request). */
    public function flushAll(): bool
    {
        return $this->store->deleteTags($this->tagIds());
    }

    public function reset()
    {
        $this->flushAll();
    }

    public function flush()
    {
        $this->flushAll();
    }

    public function resetTag($name)
    {
        $this->store->deleteTags([$this->tagId($name)]);
        return $this->tagId($name);
    }

    public function flushTag($name)
    {
        return $this->resetTag($name);
    }

    /** No per-tag ids: the names themselves, without a server round trip. */
    public function getNamespace()
    {
        return implode('|', $this->tagIds());
    }

    protected function tagIds()
    {
        return array_map([$this, 'tagId'], $this->names);
    }

    public function tagId($name)
    {
        return $this->store->tagId((string)$name);
    }

    public function tagKey($name)
    {
        return $this->tagId($name);
    }
}
