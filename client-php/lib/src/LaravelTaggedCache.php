<?php
namespace Mdcached\Cache;

use Illuminate\Cache\TaggedCache;

/**
 * What Cache::tags([...]) returns on the mdcached driver: a TaggedCache
 * (getTags() gives the LaravelTagSet) whose store attaches the tags to every
 * record it writes.  A key is not namespaced by its tags: tags(['a'])->get('k')
 * and Cache::get('k') read the same record.  flush() is one deleteByTag of
 * the tags, answered by the server's count (false when a server failed).
 */
class LaravelTaggedCache extends TaggedCache
{
    /** @var LaravelTagSet */
    protected $tags;

    protected function itemKey($key)
    {
        return $key;
    }

    public function taggedItemKey($key)
    {
        return $key;
    }

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
