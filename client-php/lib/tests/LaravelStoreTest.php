<?php
use Illuminate\Cache\Repository;
use Illuminate\Cache\TaggedCache;
use Illuminate\Cache\TagSet;
use Illuminate\Contracts\Cache\LockProvider;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Mdcached\Cache\LaravelStore;
use PHPUnit\Framework\TestCase;

// Lock::block() of illuminate/cache 11 and 12 calls now(), a helper of
// laravel/framework's Foundation (Date::now()), which the laravel11/laravel12
// sets do not hold: the same, for these tests
if (!function_exists('now')) {
    function now($tz = null)
    {
        return Illuminate\Support\Carbon::now($tz);
    }
}

/**
 * The Laravel store (illuminate/cache 8, 11, 12): Store contract, tagged
 * caches, locks.
 *
 * @group laravel
 */
final class LaravelStoreTest extends TestCase
{
    private Mdcached\Client $c;
    private LaravelStore $store;

    protected function setUp(): void
    {
        $this->c = mdc_test_client();
        $this->c->flush();
        $this->store = new LaravelStore($this->c, 'lv');
    }

    /** @return int[] how many requests of each kind the server saw since $before */
    private function opsSince(array $before): array
    {
        $now = $this->ops();
        foreach ($now as $k => $v) {
            $now[$k] = $v - $before[$k];
        }
        return $now;
    }

    /** @return int[] the server's request counters */
    private function ops(): array
    {
        $s = array_values($this->c->getStats())[0];
        return ['get' => $s['cmd_get'], 'set' => $s['cmd_set'], 'del_by_tag' => $s['cmd_del_by_tag'],
                'delete' => $s['delete_hits'] + $s['delete_misses'], 'atomic' => $s['cmd_atomic']];
    }

    public function testStore(): void
    {
        $s = $this->store;
        $this->assertSame('lv:', $s->getPrefix(), 'a prefix ends in ":", as Laravel\'s stores');
        $this->assertNull($s->get('k'));
        $this->assertTrue($s->put('k', ['v'], 60));
        $this->assertSame(['v'], $s->get('k'));
        $this->assertSame(['v'], $this->c->get('lv:k'), 'the record is <prefix>:<key>');
        $this->assertTrue($s->putMany(['a' => 1, 'b' => 2, 'f' => false], 60));
        $this->assertSame(['a' => 1, 'b' => 2, 'f' => false, 'z' => null], $s->many(['a', 'b', 'f', 'z']));
        $this->assertFalse($s->get('f'), 'a stored false is not a miss');
        $this->assertSame(2, $s->increment('a', 1));
        $this->assertSame(1, $s->decrement('a'));
        $this->assertSame(0, $s->decrement('a', 5), 'counters stop at 0, as memcached\'s');
        $this->assertTrue($s->forever('f', 'ever'));
        $this->assertSame('ever', $s->get('f'));
        $this->assertTrue($s->forget('f'));
        $this->assertNull($s->get('f'));
        $this->assertTrue($s->add('n', 'first', 60));
        $this->assertFalse($s->add('n', 'second', 60));
        $this->assertSame('first', $s->get('n'));
        $this->assertTrue($s->put('gone', 'x', 0), 'put with no time left deletes');
        $this->assertNull($s->get('gone'));
        $this->assertTrue($s->flush());
        $this->assertNull($s->get('k'));
        $this->assertSame('', (new LaravelStore($this->c))->getPrefix());
    }

    public function testCounterCreatedWhenMissing(): void
    {
        $s = $this->store;
        $this->assertSame(5, $s->increment('c', 5), 'a missing counter starts at the increment');
        $this->assertSame(7, $s->increment('c', 2));
        $this->assertSame(4, $s->increment('c', -3), 'a negative increment decrements');
        $this->assertSame(0, $s->decrement('d', 3), 'a missing counter decremented starts at 0');
        $this->assertSame(2, $s->decrement('d', -2));
        $this->assertTrue($s->flush());
        $this->assertNull($s->get('c'), 'a created counter carries the store\'s tag: flush() deletes it');
    }

    public function testFlushIsLimitedToThePrefix(): void
    {
        $other = new LaravelStore($this->c, 'other');
        $this->store->put('k', 1, 60);
        $this->store->forever('f', 1);
        $other->put('k', 2, 60);
        $this->c->set('raw', 3);
        $before = $this->ops();
        $this->assertTrue($this->store->flush());
        $this->assertSame(1, $this->opsSince($before)['del_by_tag'], 'one server-side tag delete');
        $this->assertNull($this->store->get('k'));
        $this->assertNull($this->store->get('f'));
        $this->assertSame(2, $other->get('k'), 'another prefix is kept');
        $this->assertSame(3, $this->c->get('raw'), 'records not written by the store are kept');
    }

    public function testRepository(): void
    {
        $cache = new Repository($this->store);
        $this->assertSame('x', $cache->remember('r', 60, fn() => 'x'));
        $this->assertSame('x', $cache->remember('r', 60, fn() => 'y'), 'remember reads the stored value');
        $this->assertSame('ever', $cache->rememberForever('rf', fn() => 'ever'));
        $this->assertTrue($cache->forever('fe', [1, 2]));
        $this->assertSame([1, 2], $cache->get('fe'));
        $this->assertTrue($cache->putMany(['m1' => 'a', 'm2' => 'b'], 60));
        $this->assertSame(['m1' => 'a', 'm2' => 'b', 'm3' => 'dflt'], $cache->many(['m1', 'm2', 'm3' => 'dflt']));
        $this->assertSame(1, $cache->increment('cnt'));
        $this->assertSame(11, $cache->increment('cnt', 10));
        $this->assertSame(6, $cache->decrement('cnt', 5));
        $this->assertTrue($cache->add('ad', 1, 60));
        $this->assertFalse($cache->add('ad', 2, 60));
        $this->assertSame('x', $cache->pull('r'));
        $this->assertFalse($cache->has('r'));
        $this->assertTrue($cache->clear(), 'Repository::clear() is the store\'s flush');
        $this->assertNull($cache->get('fe'));
    }

    public function testTagsReturnTaggedCache(): void
    {
        $cache = new Repository($this->store);
        $this->assertTrue($cache->supportsTags());
        $tagged = $cache->tags(['people', 'authors']);
        $this->assertInstanceOf(TaggedCache::class, $tagged);
        $this->assertInstanceOf(TagSet::class, $tagged->getTags());
        $this->assertSame(['people', 'authors'], $tagged->getTags()->getNames());
        $this->assertSame(['books'], $cache->tags('books')->getTags()->getNames());
        $this->assertSame(['a', 'b'], $cache->tags('a', 'b')->getTags()->getNames());
        $this->assertSame(['a', 'b'], $cache->tags('a')->tags('b')->getTags()->getNames(), 'nested tags add up');
        $this->assertSame(
            'laravel:lv::tag:people|laravel:lv::tag:authors',
            $tagged->getTags()->getNamespace(),
            'the namespace is the server tags: no tag ids are read from the cache'
        );
    }

    public function testTaggedOperations(): void
    {
        $cache = new Repository($this->store);
        $t = $cache->tags(['people', 'authors']);
        $this->assertTrue($t->put('john', 'John', 60));
        $this->assertSame('John', $t->get('john'));
        $this->assertNull($cache->get('john'), 'a tagged key is scoped by its tags, as on Laravel\'s stores');
        $this->assertNull($cache->tags(['authors', 'people'])->get('john'), 'and by their order');
        $this->assertNull($cache->tags(['people'])->get('john'));
        $this->assertTrue($t->putMany(['m1' => 1, 'm2' => 2], 60));
        $this->assertSame(['m1' => 1, 'm2' => 2, 'mx' => null], $t->many(['m1', 'm2', 'mx']));
        $this->assertSame(['m1' => null], $cache->many(['m1']), 'many()/putMany() are scoped too');
        $this->assertSame(3, $t->increment('m1', 2));
        $this->assertSame(5, $t->increment('new', 5), 'a tagged increment of a missing counter creates it');
        $this->assertSame(4, $t->decrement('new'));
        $this->assertTrue($t->forever('fe', 'F'));
        $this->assertSame('R', $t->remember('rm', 60, fn() => 'R'));
        $this->assertTrue($t->add('ad', 'A', 60));
        $this->assertTrue($t->forget('m2'));
        $this->assertNull($t->get('m2'));
        $scope = sha1('laravel:lv::tag:people|laravel:lv::tag:authors');
        $ext = $this->c->get("lv:$scope:john", null, Mdcached\Client::GET_EXTENDED);
        $tags = $ext['tags'];
        sort($tags);
        $want = [Mdcached\Client::tagOf('laravel:lv:'), Mdcached\Client::tagOf('laravel:lv::tag:people'),
                 Mdcached\Client::tagOf('laravel:lv::tag:authors')];
        sort($want);
        $this->assertSame($want, $tags, 'the record carries the store\'s tag and one per name');
        $cache->put('plain', 'P', 60);
        $anne = $cache->tags('people');
        $anne->put('anne', 'Anne', 60);

        $before = $this->ops();
        $this->assertTrue($cache->tags('authors')->flush());
        $this->assertSame(
            ['get' => 0, 'set' => 0, 'del_by_tag' => 1, 'delete' => 0, 'atomic' => 0],
            $this->opsSince($before),
            'a tagged flush is one server-side tag delete and nothing else'
        );
        foreach (['john', 'm1', 'new', 'fe', 'rm', 'ad'] as $k) {
            $this->assertNull($t->get($k), "$k carried the tag");
        }
        $this->assertSame('Anne', $anne->get('anne'));
        $this->assertSame('P', $cache->get('plain'));
        $this->assertTrue($cache->tags(['books', 'people'])->flush(), 'any of the tags');
        $this->assertNull($anne->get('anne'));
        $this->assertSame('P', $cache->get('plain'), 'untagged records stay');
        $this->assertTrue($cache->tags('people')->clear(), 'clear() of a tagged cache flushes its tags');
    }

    /** Events of a tagged flush: illuminate/cache 12 announces it; 8 and 11 have no such events. */
    public function testTaggedFlushEvents(): void
    {
        $events = new class () implements Illuminate\Contracts\Events\Dispatcher {
            public array $seen = [];
            public function listen($events, $listener = null) {}
            public function hasListeners($eventName) { return true; }
            public function subscribe($subscriber) {}
            public function until($event, $payload = []) { return $this->dispatch($event, $payload, true); }
            public function dispatch($event, $payload = [], $halt = false)
            {
                $this->seen[] = is_object($event) ? (new ReflectionClass($event))->getShortName() : $event;
                return null;
            }
            public function push($event, $payload = []) {}
            public function flush($event) {}
            public function forget($event) {}
            public function forgetPushed() {}
        };
        $cache = new Repository($this->store);
        $cache->setEventDispatcher($events);
        $t = $cache->tags(['ev']);
        $t->put('k', 1, 60);
        $events->seen = [];
        $this->assertTrue($t->flush());
        $this->assertNull($cache->get('k'));
        $flushEvents = array_values(array_filter($events->seen, fn($e) => str_starts_with($e, 'CacheFlush')));
        if (class_exists('Illuminate\\Cache\\Events\\CacheFlushing')) {
            $this->assertSame(['CacheFlushing', 'CacheFlushed'], $flushEvents);
        } else {
            $this->assertSame([], $flushEvents);
        }
    }

    public function testTaggedFlushDeletesAtomicallyOnServer(): void
    {
        $cache = new Repository($this->store);
        for ($i = 0; $i < 100; $i++) {
            $cache->tags('t')->put("k$i", $i, 60);
        }
        $this->assertSame(5, $cache->tags('t')->get('k5'));
        $this->assertSame(100, $this->c->deleteByTag('laravel:lv::tag:t'), 'one server request deletes all');
        $this->assertNull($cache->tags('t')->get('k5'));
    }

    public function testTaggedFlushReportsServerFailure(): void
    {
        $dead = new Mdcached\Client();
        $dead->setOption(Mdcached\Client::OPT_CONNECT_TIMEOUT, 200);
        $dead->addServer('127.0.0.1', 1);
        $cache = new Repository(new LaravelStore($dead, 'lv'));
        $this->assertFalse($cache->tags('t')->flush(), 'an unreachable server is a failed flush, not true');
    }

    public function testLocks(): void
    {
        $cache = new Repository($this->store);
        $this->assertInstanceOf(LockProvider::class, $this->store);
        $a = $cache->lock('job', 10);
        $this->assertInstanceOf(Illuminate\Cache\Lock::class, $a);
        $this->assertTrue($a->acquire());
        $this->assertSame($a->owner(), $this->c->get('lv:job'), 'the lock record holds the owner token');
        $b = $cache->lock('job', 10);
        $this->assertFalse($b->acquire(), 'a held lock is not acquired twice');
        $this->assertFalse($b->get(fn() => 'ran'), 'get() does not run the callback without the lock');
        $this->assertFalse($b->release(), 'another owner cannot release it');
        $this->assertSame($a->owner(), $this->c->get('lv:job'));
        $restored = $cache->restoreLock('job', $a->owner());
        $this->assertTrue($restored->release(), 'the owner\'s token releases it from another process');
        $this->assertFalse($this->c->get('lv:job'));
        $this->assertFalse($a->release(), 'released once');
        $this->assertSame('ran', $b->get(fn() => 'ran'), 'free again');
        $this->assertFalse($this->c->get('lv:job'), 'get() released it after the callback');

        $this->assertTrue($a->acquire());
        $b->forceRelease();
        $this->assertFalse($this->c->get('lv:job'), 'forceRelease ignores the owner');

        $forever = $cache->lock('forever');
        $this->assertTrue($forever->acquire(), 'no seconds: held until released');
        $this->assertSame($forever->owner(), $this->c->get('lv:forever'));
        $this->assertFalse($cache->lock('forever')->acquire());

        $this->assertTrue($cache->lock('kept', 60)->acquire());
        $this->assertTrue($this->store->flush());
        $this->assertFalse($cache->lock('kept', 60)->acquire(), 'a flush of the store leaves locks alone');
    }

    public function testLockOwnerAndExpiry(): void
    {
        $cache = new Repository($this->store);
        $a = $cache->lock('exp', 1, 'owner-a');
        $this->assertSame('owner-a', $a->owner());
        $this->assertTrue($a->acquire());
        $this->assertTrue(
            (new ReflectionMethod($a, 'isOwnedByCurrentProcess'))->invoke($a),
            'getCurrentOwner() reads the token'
        );
        $this->assertFalse((new ReflectionMethod($cache->restoreLock('exp', 'x'), 'isOwnedByCurrentProcess'))
            ->invoke($cache->restoreLock('exp', 'x')));
        // block(): waits while another owner holds it, gets it when it expires
        $b = $cache->lock('exp', 5, 'owner-b');
        $b->betweenBlockedAttemptsSleepFor(50);
        $this->assertFalse($cache->lock('exp', 5)->acquire(), 'still held when block() starts');
        // it gets it once the 1 s lock expires; block()'s own timeout (30 s)
        // is a ceiling only a lock that never expires reaches (it throws)
        $this->assertSame('in', $b->block(30, fn() => 'in'), 'block() got it when it expired');
        $this->assertFalse($this->c->get('lv:exp'), 'block() with a callback released it');
        // and gives up after its timeout
        $this->assertTrue($cache->lock('held', 30, 'holder')->acquire());
        $c = $cache->lock('held', 30)->betweenBlockedAttemptsSleepFor(50);
        $t0 = microtime(true);
        try {
            $c->block(2);
            $this->fail('block() on a held lock must time out');
        } catch (LockTimeoutException $e) {
            // it waited (Laravel 8 counts whole seconds: 1 to 2 s); no upper
            // bound in seconds - a busy machine took 3.1 s - and a block()
            // that ignored its timeout would have got the lock when it
            // expired, 30 s on, and failed above
            $this->assertGreaterThan(0.9, microtime(true) - $t0);
        }
        // an expired lock taken by someone else is not released by the first owner
        $d = $cache->lock('late', 1, 'first');
        $this->assertTrue($d->acquire());
        usleep(2100000);
        $this->assertTrue($cache->lock('late', 30, 'second')->acquire());
        $this->assertFalse($d->release());
        $this->assertSame('second', $this->c->get('lv:late'));
    }

    /**
     * release() is compare-and-delete: the lock changes hands between its read
     * of the owner and its delete (the lock expired and another owner took
     * it), and the new owner's lock must survive.  A get-then-delete release
     * (Laravel's MemcachedLock) deletes it.
     */
    public function testReleaseIsAtomic(): void
    {
        $port = (int)getenv('MDC_TEST_PORT');
        $racing = new class () extends Mdcached\Client {
            public $between = null;
            public function get(string $key, ?callable $cb = null, int $flags = 0): mixed
            {
                $r = parent::get($key, $cb, $flags);
                if ($this->between) {
                    ($this->between)();
                    $this->between = null;
                }
                return $r;
            }
        };
        $racing->addServer(getenv('MDC_TEST_HOST') ?: '127.0.0.1', $port);
        $mine = (new LaravelStore($racing, 'lv'))->lock('race', 30, 'mine');
        $this->assertTrue($mine->acquire());
        $racing->between = function () {
            $this->c->delete('lv:race');            // expired ...
            $this->assertTrue($this->store->lock('race', 30, 'theirs')->acquire());  // ... and taken
        };
        $this->assertFalse($mine->release(), 'the record changed after the read: not released');
        $this->assertSame('theirs', $this->c->get('lv:race'), 'the new owner keeps the lock');
    }

    /**
     * stale_invalidation: after a tagged flush one reader per record (the
     * lease's winner) runs remember()'s callback; a second client reading
     * while it recomputes gets the stale value without running its own.
     */
    public function testStaleTaggedFlushRecomputesOnce(): void
    {
        $c2 = mdc_test_client();
        $r1 = new Repository(new LaravelStore($this->c, 'lv', [], true));
        $r2 = new Repository(new LaravelStore($c2, 'lv', [], true));
        foreach (['a', 'b', 'c'] as $k) {
            $this->assertTrue($r1->tags(['page'])->put($k, "old$k", 60));
        }
        $this->assertTrue($r1->tags(['page'])->flush());
        foreach (['a', 'b', 'c'] as $k) {
            $runs = 0;
            $inner = null;
            $v = $r1->tags(['page'])->remember($k, 60, function () use ($r2, $k, &$runs, &$inner) {
                $runs++;
                // another worker reads while this one recomputes
                $inner = $r2->tags(['page'])->remember($k, 60, function () use (&$runs) {
                    $runs++;
                    return 'second';
                });
                return "new$k";
            });
            $this->assertSame("new$k", $v);
            $this->assertSame("old$k", $inner, 'the other reader gets the stale value');
            $this->assertSame(1, $runs, 'one callback per record across both clients');
            $this->assertSame("new$k", $r2->tags(['page'])->get($k), 'stored: a hit for everyone');
        }
        // flexible() (illuminate/cache 11.23+): one recompute, the stale value for the other
        if (method_exists(Repository::class, 'flexible')) {
            $this->assertSame('f1', $r1->tags(['page'])->flexible('f', [60, 120], fn() => 'f1'));
            $this->assertTrue($r1->tags(['page'])->flush());
            $runs = 0;
            $inner = null;
            $v = $r1->tags(['page'])->flexible('f', [60, 120], function () use ($r2, &$runs, &$inner) {
                $runs++;
                $inner = $r2->tags(['page'])->flexible('f', [60, 120], function () use (&$runs) {
                    $runs++;
                    return 'second';
                });
                return 'f2';
            });
            $this->assertSame(['f2', 'f1', 1], [$v, $inner, $runs]);
            $this->assertSame('f2', $r2->tags(['page'])->flexible('f', [60, 120], fn() => 'no'));
        }
        // an untagged flush still clears
        $this->assertTrue($r1->flush());
        $this->assertNull($r1->tags(['page'])->get('a'));
        // without the option a tagged flush deletes: both clients recompute
        $q1 = new Repository(new LaravelStore($this->c, 'lv'));
        $q2 = new Repository(new LaravelStore($c2, 'lv'));
        $q1->tags(['page'])->put('d', 'old', 60);
        $this->assertTrue($q1->tags(['page'])->flush());
        $runs = 0;
        $q1->tags(['page'])->remember('d', 60, function () use ($q2, &$runs) {
            $runs++;
            $q2->tags(['page'])->remember('d', 60, function () use (&$runs) {
                $runs++;
                return 'second';
            });
            return 'first';
        });
        $this->assertSame(2, $runs, 'plain flush: no lease, both compute');
    }
}
