<?php
namespace Mdcached\Cache;

use Illuminate\Cache\TaggedCache;

/**
 * What Cache::tags([...]) returns on the mdcached driver: a TaggedCache
 * (getTags() gives the LaravelTagSet) whose store attaches the tags to every
 * record it writes.  Keys are scoped by the tags as Laravel's own tagged
 * caches scope them (TaggedCache::taggedItemKey(): sha1 of the tag set's
 * namespace, here its tag names in order, then ":" and the key), so an item
 * stored through tags(['a', 'b']) is found only through tags(['a', 'b']),
 * as on Laravel's memcached store.  flush() is one deleteByTag of the tags,
 * answered by the server's count (false when a server failed).
 */
class LaravelTaggedCache extends TaggedCache
{
    /** @var LaravelTagSet */
    protected $tags;

    public function flush()
    {
        // illuminate/cache 12 announces a flush; earlier versions have no such events
        $ev = 'Illuminate\\Cache\\Events\\';
        if (class_exists($ev . 'CacheFlushing')) {
            $this->event(new ($ev . 'CacheFlushing')($this->getName()));
        }
        $ok = $this->tags->flushAll();
        $done = $ev . ($ok ? 'CacheFlushed' : 'CacheFlushFailed');
        if (class_exists($done)) {
            $this->event(new $done($this->getName()));
        }
        return $ok;
    }
}
