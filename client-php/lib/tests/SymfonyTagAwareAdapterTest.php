<?php
use Mdcached\Cache\SymfonyTagAwareAdapter;
use PHPUnit\Framework\TestCase;
use Symfony\Component\Cache\Adapter\TagAwareAdapterInterface;
use Symfony\Component\Cache\PruneableInterface;
use Symfony\Component\Cache\ResettableInterface;
use Symfony\Contracts\Cache\ItemInterface;
use Symfony\Contracts\Cache\TagAwareCacheInterface;

/** A value that cannot come back: unserialize() throws. */
final class MdcSfWakeupThrows
{
    public function __wakeup(): void
    {
        throw new RuntimeException('cannot wake up');
    }
}

/**
 * The adapter keeps the contract of Symfony's own adapters (PSR-6,
 * TagAwareAdapterInterface, the contracts' get() with $beta and metadata,
 * namespaces, deferred saves), on symfony/cache 5.4, 6.4 and 7.1.
 * @group symfony
 */
final class SymfonyTagAwareAdapterTest extends TestCase
{
    private Mdcached\Client $c;

    protected function setUp(): void
    {
        $this->c = mdc_test_client();
        $this->c->flush();
    }

    private function pool(string $ns = 'sf'): SymfonyTagAwareAdapter
    {
        return new SymfonyTagAwareAdapter($this->c, $ns);
    }

    public function testInterfaces(): void
    {
        $p = $this->pool();
        $this->assertInstanceOf(TagAwareAdapterInterface::class, $p);
        $this->assertInstanceOf(TagAwareCacheInterface::class, $p);
    }

    public function testSeveralTagsAndInvalidation(): void
    {
        $p = $this->pool();
        $p->save($p->getItem('a')->set('A')->tag(['t1', 't2']));
        $p->save($p->getItem('b')->set('B')->tag('t2'));
        $p->save($p->getItem('c')->set('C')->tag('t3'));
        $p->save($p->getItem('d')->set('D'));
        $this->assertSame(['t1' => 't1', 't2' => 't2'], $p->getItem('a')->getMetadata()[ItemInterface::METADATA_TAGS]);
        $this->assertTrue($p->invalidateTags(['t1']));
        $this->assertFalse($p->getItem('a')->isHit(), 'item with several tags: any one invalidates it');
        $this->assertTrue($p->getItem('b')->isHit());
        $this->assertTrue($p->invalidateTags(['t2', 't3']));
        $this->assertFalse($p->getItem('b')->isHit());
        $this->assertFalse($p->getItem('c')->isHit());
        $this->assertTrue($p->getItem('d')->isHit());
        $this->assertSame(0, mdc_stat($this->c, 'tagged_items') - 1, 'only d left, carrying the namespace tag');
    }

    public function testInvalidationAcrossPools(): void
    {
        // two adapters (two services, or two requests) on the same namespace
        $p1 = $this->pool();
        $p2 = $this->pool();
        $other = $this->pool('elsewhere');
        $p1->save($p1->getItem('k')->set(1)->tag('shared'));
        $other->save($other->getItem('k')->set(2)->tag('shared'));
        $this->assertTrue($p2->getItem('k')->isHit());
        $p2->invalidateTags(['shared']);
        $this->assertFalse($p1->getItem('k')->isHit(), 'invalidated through the other pool');
        $this->assertTrue($other->getItem('k')->isHit(), 'another namespace keeps its tags');
    }

    public function testDeferredSaves(): void
    {
        $p = $this->pool();
        $p->saveDeferred($p->getItem('x')->set('X')->tag('dt'));
        $p->saveDeferred($p->getItem('y')->set('Y')->tag(['dt', 'other']));
        $this->assertSame([], $this->c->getByTag("sf:\0tags\0dt"), 'nothing sent before commit');
        $this->assertTrue($p->getItem('x')->isHit(), 'a deferred item reads back');
        $this->assertTrue($p->commit());
        $this->assertCount(2, $this->c->getByTag("sf:\0tags\0dt"), 'server tags after commit');
        $p->invalidateTags(['dt']);
        $this->assertFalse($p->hasItem('x'));
        $this->assertFalse($p->hasItem('y'));
    }

    public function testContractsGetWithTags(): void
    {
        $p = $this->pool();
        $calls = 0;
        $compute = function (ItemInterface $item) use (&$calls) {
            $calls++;
            $item->tag(['user1', 'page'])->expiresAfter(100);
            return "value$calls";
        };
        $this->assertSame('value1', $p->get('page1', $compute));
        $this->assertSame('value1', $p->get('page1', $compute));
        $p->invalidateTags(['user1']);
        $this->assertSame('value2', $p->get('page1', $compute));
        $this->assertTrue($p->delete('page1'));
        $this->assertSame('value3', $p->get('page1', $compute));
    }

    public function testExpiredItemLeavesNoTagIndex(): void
    {
        $p = $this->pool();
        $base = mdc_stat($this->c, 'tag_links');
        for ($i = 0; $i < 50; $i++) {
            $p->save($p->getItem("e$i")->set($i)->tag(['exp', "e$i"])->expiresAfter(1));
        }
        $this->assertGreaterThan($base, mdc_stat($this->c, 'tag_links'));
        mdc_sleep_past_ttl(1);
        $this->assertFalse($p->getItem('e1')->isHit());
        // nothing findable by the tag, and invalidating it finds nothing
        $this->assertSame([], $this->c->getByTag("sf:\0tags\0exp"));
        $this->assertSame(0, $this->c->deleteByTag("sf:\0tags\0exp"));
        // the server's expiry sweep (run-sets.sh: every 100 ms, a tenth
        // of the buckets each time) reclaims the records and their links
        for ($i = 0; $i < 50 && mdc_stat($this->c, 'tag_links') > 0; $i++) {
            usleep(100000);
        }
        $this->assertSame(0, mdc_stat($this->c, 'tag_links'), 'no tag index left after expiry');
        $this->assertSame(0, mdc_stat($this->c, 'tagged_items'));
    }

    public function testClearAndDelete(): void
    {
        $p = $this->pool();
        $q = $this->pool('keep');
        $p->save($p->getItem('a')->set(1)->tag('t'));
        $q->save($q->getItem('a')->set(2));
        $this->assertTrue($p->deleteItem('a'));
        $this->assertFalse($p->hasItem('a'));
        $p->save($p->getItem('b')->set(1));
        $this->assertTrue($p->clear());
        $this->assertFalse($p->hasItem('b'));
        $this->assertTrue($q->hasItem('a'));
    }

    public function testReservedKeysRejected(): void
    {
        $this->expectException(\Psr\Cache\InvalidArgumentException::class);
        $this->pool()->getItem('a{b');
    }

    public function testIntegerKeysRefused(): void
    {
        $p = $this->pool();
        foreach (['getItem' => fn() => $p->getItem(2), 'hasItem' => fn() => $p->hasItem(2),
                  'deleteItem' => fn() => $p->deleteItem(2), 'getItems' => fn() => $p->getItems(['a', 2]),
                  'deleteItems' => fn() => $p->deleteItems([2]), 'object' => fn() => $p->getItem(new stdClass())] as $m => $call) {
            try {
                $call();
                $this->fail("$m accepted a non-string key");
            } catch (\Psr\Cache\InvalidArgumentException $e) {
                $this->addToAssertionCount(1);
            }
        }
    }

    public function testClearWithPrefixClearsTheNamespace(): void
    {
        $p = $this->pool();
        $keep = $this->pool('keep');
        $p->save($p->getItem('user.1')->set(1)->tag('u'));
        $p->save($p->getItem('user.2')->set(2));
        $p->save($p->getItem('page.1')->set(3));
        $keep->save($keep->getItem('user.1')->set('kept'));
        $this->assertTrue($p->clear('user.'), 'clear($prefix) succeeds');
        $this->assertFalse($p->hasItem('user.1'));
        $this->assertFalse($p->hasItem('user.2'));
        $this->assertFalse($p->hasItem('page.1'), 'the whole namespace goes (documented)');
        $this->assertSame('kept', $keep->getItem('user.1')->get(), 'another namespace stays');
        $this->assertSame([], $this->c->getByTag("sf:\0tags\0u"));
        // and clear() with no prefix; deferred items are dropped too
        $p->saveDeferred($p->getItem('d')->set(1));
        $p->save($p->getItem('e')->set(1));
        $this->assertTrue($p->clear());
        $this->assertFalse($p->hasItem('d'));
        $this->assertFalse($p->hasItem('e'));
    }

    public function testPruneUnsupportedResetSupported(): void
    {
        $p = $this->pool();
        $this->assertNotInstanceOf(PruneableInterface::class, $p, 'the server expires records: no prune(), as MemcachedAdapter');
        $this->assertInstanceOf(ResettableInterface::class, $p);
        $p->saveDeferred($p->getItem('r')->set(1));
        $p->reset();
        $this->assertSame(1, $this->c->get('sf:r')['value'] ?? null, 'reset() commits deferred items, as in Symfony');
    }

    public function testBetaEarlyExpiration(): void
    {
        $p = $this->pool();
        $calls = 0;
        $cb = function (ItemInterface $item) use (&$calls) {
            $item->expiresAfter(3600);
            return ++$calls;
        };
        $this->assertSame(1, $p->get('b', $cb));
        $this->assertSame(1, $p->get('b', $cb, 0.0), 'beta 0: no early expiration');
        $this->assertSame(2, $p->get('b', $cb, INF), 'beta INF: recomputed now');
        $this->assertSame(2, $p->get('b', $cb), 'and stored');
        try {
            $p->get('b', $cb, -1.0);
            $this->fail('a negative beta is accepted');
        } catch (\Psr\Cache\InvalidArgumentException $e) {
            $this->addToAssertionCount(1);
        }
    }

    public function testMetadata(): void
    {
        $p = $this->pool();
        $cb = function (ItemInterface $item) {
            usleep(30000); // a computation of 30 ms: its ctime
            $item->expiresAfter(100)->tag(['m1', 'm2']);
            return 'v';
        };
        $this->assertSame('v', $p->get('meta', $cb));
        $metadata = null;
        $this->assertSame('v', $p->get('meta', $cb, null, $metadata));
        $this->assertEqualsWithDelta(time() + 100, $metadata[ItemInterface::METADATA_EXPIRY], 2);
        $this->assertGreaterThanOrEqual(25, $metadata[ItemInterface::METADATA_CTIME], 'ctime in ms');
        $this->assertSame(['m1' => 'm1', 'm2' => 'm2'], $metadata[ItemInterface::METADATA_TAGS]);
        $m = $p->getItem('meta')->getMetadata();
        $this->assertSame($metadata[ItemInterface::METADATA_EXPIRY], $m[ItemInterface::METADATA_EXPIRY]);
        // read through another adapter: the metadata is stored with the record
        $this->assertSame(['m1' => 'm1', 'm2' => 'm2'], $this->pool()->getItem('meta')->getMetadata()[ItemInterface::METADATA_TAGS]);
    }

    public function testNamespaces(): void
    {
        try {
            new SymfonyTagAwareAdapter($this->c, 'bad{ns');
            $this->fail('reserved characters in a namespace accepted');
        } catch (\Psr\Cache\InvalidArgumentException $e) {
            $this->addToAssertionCount(1);
        }
        $a = $this->pool('A');
        $b = $this->pool('B');
        $a->save($a->getItem('k')->set('a')->tag('t'));
        $b->save($b->getItem('k')->set('b')->tag('t'));
        $this->assertSame('a', $a->getItem('k')->get());
        $this->assertSame('b', $b->getItem('k')->get());
        $this->assertSame('a', $this->c->get('A:k')['value'], 'the namespace prefixes the server key');
        $a->invalidateTags(['t']);
        $this->assertFalse($a->hasItem('k'));
        $this->assertTrue($b->hasItem('k'), 'tags are per namespace');
        $none = new SymfonyTagAwareAdapter($this->c);
        $none->save($none->getItem('123')->set('n'));
        $this->assertSame(['123'], array_map('strval', array_keys(iterator_to_array($none->getItems(['123'])))));
        $this->assertSame('n', $none->getItem('123')->get());
    }

    public function testDefaultLifetimeAndExpiry(): void
    {
        $p = new SymfonyTagAwareAdapter($this->c, 'dl', 1);
        $p->save($p->getItem('short')->set(1));
        $p->save($p->getItem('long')->set(1)->expiresAfter(3600));
        $p->save($p->getItem('past')->set(1)->expiresAt(new DateTime('-1 minute')));
        $this->assertFalse($p->hasItem('past'));
        mdc_sleep_past_ttl(1);
        $this->assertFalse($p->hasItem('short'), 'the default lifetime');
        $this->assertTrue($p->hasItem('long'));
    }

    public function testUnserializableValueIsAMiss(): void
    {
        $p = $this->pool();
        $p->save($p->getItem('good')->set('G'));
        $this->c->set('sf:bad', new MdcSfWakeupThrows());
        $this->assertFalse($p->getItem('bad')->isHit());
        $items = iterator_to_array($p->getItems(['bad', 'good']));
        $this->assertFalse($items['bad']->isHit());
        $this->assertSame('G', $items['good']->get(), 'the other key still hits');
        $this->assertSame('computed', $p->get('bad', fn() => 'computed'));
        $this->assertSame('computed', $p->getItem('bad')->get());
    }

    public function testCreateConnection(): void
    {
        $port = (int)getenv('MDC_TEST_PORT');
        $sock = getenv('MDC_TEST_SOCK');
        foreach (["mdcached://127.0.0.1:$port", "mdcached://$sock"] as $dsn) {
            $client = SymfonyTagAwareAdapter::createConnection($dsn);
            $this->assertInstanceOf(Mdcached\Client::class, $client);
            $p = new SymfonyTagAwareAdapter($client, 'dsn');
            $p->save($p->getItem('k')->set($dsn)->tag('t'));
            $this->assertSame($dsn, $this->pool('dsn')->getItem('k')->get());
            $this->assertTrue($p->invalidateTags(['t']));
            $this->assertFalse($this->pool('dsn')->hasItem('k'));
        }
    }

    public function testTagsSharedAcrossSymfonyVersions(): void
    {
        // the server tag does not depend on Symfony's private tag prefix
        $p = $this->pool();
        $p->save($p->getItem('x')->set(1)->tag('v'));
        $this->assertSame(1, $this->c->deleteByTag("sf:\0tags\0v"));
        $this->assertFalse($p->hasItem('x'));
    }

    public function testGetRequestsAndSameAnswersAsSymfonysPath(): void
    {
        $p = $this->pool();
        $cb = function (ItemInterface $item) {
            $item->tag(['g1', 'g2'])->expiresAfter(600);
            usleep(2000);
            return ['computed'];
        };
        $get = fn() => mdc_stat($this->c, 'cmd_get');
        $set = fn() => mdc_stat($this->c, 'cmd_set');
        [$g0, $s0] = [$get(), $set()];
        $this->assertSame(['computed'], $p->get('r', $cb));
        $this->assertSame([1, 1], [$get() - $g0, $set() - $s0], 'a miss: one get, one set');
        [$g0, $s0] = [$get(), $set()];
        $m = null;
        $this->assertSame(['computed'], $p->get('r', $cb, 1.0, $m));
        $this->assertSame([1, 0], [$get() - $g0, $set() - $s0], 'a hit: one get');
        $item = $this->pool()->getItem('r');
        $this->assertSame($item->getMetadata(), $m, 'the metadata Symfony gives');
        $p->save($p->getItem('plain')->set(0));
        $m = null;
        $this->assertSame(0, $p->get('plain', fn() => 1, null, $m));
        $this->assertSame($this->pool()->getItem('plain')->getMetadata(), $m, 'untagged, no expiry');
        // deferred items come first, as in Symfony
        $p->saveDeferred($p->getItem('r')->set('deferred'));
        $this->assertSame('deferred', $p->get('r', $cb));
        $this->assertSame('deferred', $this->pool()->get('r', $cb), 'committed by get()');
        // a record that is not this adapter's is recomputed, as in Symfony
        $this->c->set('sf:foreign', 'raw');
        $this->assertSame(['computed'], $p->get('foreign', $cb));
    }

    public function testEarlyRecomputationElected(): void
    {
        $p = $this->pool();
        $calls = 0;
        $cb = function (ItemInterface $item) use (&$calls) {
            $item->expiresAfter(2);
            usleep(50000); // ctime 50 ms
            return ++$calls;
        };
        $this->assertSame(1, $p->get('e', $cb));
        // with a huge beta, expiry 2 s away is "soon" against 50 ms x beta
        $this->assertSame(2, $p->get('e', $cb, 1e6), 'elected for early recomputation');
        $this->assertSame(2, $p->get('e', $cb, 0.0));
    }

    public function testSaveWritesWhatCommitWrites(): void
    {
        $p = $this->pool();
        $sets = mdc_stat($this->c, 'cmd_set');
        $a = $p->getItem('a')->set(['A'])->tag(['t1', 't2'])->expiresAfter(300);
        $this->assertTrue($p->save($a));
        $this->assertSame(1, mdc_stat($this->c, 'cmd_set') - $sets, 'one set');
        $this->assertSame(['t1' => 't1', 't2' => 't2'], $a->getMetadata()[ItemInterface::METADATA_TAGS], 'the item knows its saved tags');
        $q = $this->pool();
        $q->saveDeferred($q->getItem('b')->set(['A'])->tag(['t1', 't2'])->expiresAfter(300));
        $this->assertTrue($q->commit());
        $ra = $this->pool()->getItem('a');
        $rb = $this->pool()->getItem('b');
        $this->assertTrue($ra->isHit());
        $this->assertSame($rb->get(), $ra->get());
        $this->assertSame($rb->getMetadata(), $ra->getMetadata());
        // a computed item carries expiry and ctime, read back through getItem()
        $p->get('c', function (ItemInterface $i) { $i->expiresAfter(300)->tag('t1'); usleep(10000); return 'C'; });
        $m = $this->pool()->getItem('c')->getMetadata();
        $this->assertEqualsWithDelta(time() + 300, $m[ItemInterface::METADATA_EXPIRY], 2);
        $this->assertGreaterThanOrEqual(5, $m[ItemInterface::METADATA_CTIME]);
        $this->assertTrue($p->invalidateTags(['t1']));
        foreach (['a', 'b', 'c'] as $k) {
            $this->assertFalse($p->hasItem($k), "$k invalidated");
        }
        // an expired item is deleted, not written
        $p->save($p->getItem('x')->set(1));
        $this->assertTrue($p->save($p->getItem('x')->set(2)->expiresAt(new DateTime('-1 second'))));
        $this->assertFalse($p->hasItem('x'));
    }

    public function testVersioningAndDeferredWithGet(): void
    {
        $p = $this->pool();
        $this->assertFalse($p->enableVersioning());
        $n = 0;
        $cb = function () use (&$n) { return ++$n; };
        $this->assertSame(1, $p->get('v', $cb));
        $this->assertSame(1, $p->get('v', $cb));
        $this->assertTrue($p->clear());
        $this->assertSame(2, $p->get('v', $cb), 'versioned ids: a clear() is seen by get()');
        $q = $this->pool('dq');
        $q->saveDeferred($q->getItem('d')->set('pending'));
        $this->assertTrue($q->clear(), 'clear() drops the deferred item');
        $this->assertSame('computed', $q->get('d', fn() => 'computed'));
        $this->assertSame('computed', $this->pool('dq')->get('d', fn() => 'other'));
    }

    public function testServerDownIsAMissAsInSymfony(): void
    {
        $dead = new Mdcached\Client();
        $s = stream_socket_server('tcp://127.0.0.1:0');
        $port = (int)substr(strrchr(stream_socket_get_name($s, false), ':'), 1);
        fclose($s);
        $dead->addServer('127.0.0.1', $port);
        $p = new SymfonyTagAwareAdapter($dead, 'down');
        $this->assertSame('computed', $p->get('k', fn() => 'computed'), 'get() computes, as Symfony adapters do');
        $this->assertFalse($p->getItem('k')->isHit());
        $this->assertFalse($p->hasItem('k'));
        $this->assertFalse($p->save($p->getItem('k')->set(1)));
    }

    /**
     * staleInvalidation: after invalidateTags() one reader per record (the
     * lease's winner) runs the callback; a second client reading while it
     * recomputes gets the stale value without running its own.
     */
    public function testStaleInvalidationRecomputesOnce(): void
    {
        $c2 = mdc_test_client();
        $p1 = new SymfonyTagAwareAdapter($this->c, 'sf', 0, true);
        $p2 = new SymfonyTagAwareAdapter($c2, 'sf', 0, true);
        $keys = ['a', 'b', 'c'];
        foreach ($keys as $k) {
            $this->assertSame("old$k", $p1->get($k, function (ItemInterface $i) use ($k) {
                $i->tag('page');
                return "old$k";
            }));
        }
        $this->assertSame('oldb', $p2->get('b', fn() => $this->fail('a fresh hit runs no callback')));
        $this->assertTrue($p1->invalidateTags(['page']));
        foreach ($keys as $k) {
            $runs = 0;
            $inner = null;
            $v = $p1->get($k, function (ItemInterface $i) use ($p2, $k, &$runs, &$inner) {
                $runs++;
                // another worker reads while this one recomputes
                $inner = $p2->get($k, function () use (&$runs) {
                    $runs++;
                    return 'second';
                });
                $i->tag('page');
                return "new$k";
            });
            $this->assertSame("new$k", $v);
            $this->assertSame("old$k", $inner, 'the other reader gets the stale value');
            $this->assertSame(1, $runs, 'one callback per record across both clients');
            $this->assertSame("new$k", $p2->get($k, fn() => $this->fail('stored: a hit for everyone')));
        }
        // the other reader gets the stale value's metadata, tags included
        $this->assertTrue($p2->invalidateTags(['page']));
        $meta = null;
        $this->assertSame('x', $p1->get('a', function (ItemInterface $i) use ($p2, &$meta) {
            $this->assertSame('newa', $p2->get('a', fn() => $this->fail('pending'), null, $meta));
            return 'x';
        }));
        $this->assertSame(['page' => 'page'], $meta[ItemInterface::METADATA_TAGS]);
        // $beta still works: INF recomputes, 0 never expires early
        $this->assertSame('beta', $p1->get('b', fn() => 'beta', INF));
        $this->assertSame('beta', $p1->get('b', fn() => $this->fail('beta 0'), 0.0));
        // without the option invalidateTags() deletes: both clients recompute
        $q1 = new SymfonyTagAwareAdapter($this->c, 'sf');
        $q2 = new SymfonyTagAwareAdapter($c2, 'sf');
        $this->assertTrue($q1->invalidateTags(['page']));
        $runs = 0;
        $q1->get('c', function (ItemInterface $i) use ($q2, &$runs) {
            $runs++;
            $q2->get('c', function () use (&$runs) {
                $runs++;
                return 'second';
            });
            return 'first';
        });
        $this->assertSame(2, $runs, 'plain invalidation: no lease, both compute');
        $this->assertFalse($this->c->get('sf:a') === false, 'stale mode keeps the records');
    }

    /**
     * Psr16Cache over the adapter returns the values from getMultiple(), as
     * over Symfony's own adapters: an item without tags carries no
     * METADATA_TAGS, which symfony/cache 6.4+ would wrap the value for.
     */
    public function testPsr16CacheGetMultipleReturnsValues(): void
    {
        $p = $this->pool();
        $psr = new Symfony\Component\Cache\Psr16Cache($p);
        $this->assertTrue($psr->set('k', 'v'));
        $this->assertTrue($psr->setMultiple(['n' => ['a' => 1], '7' => 7.5]));
        $this->assertSame('v', $psr->get('k'));
        $got = $psr->getMultiple(['k', 'n', '7', 'x'], 'dflt');
        $this->assertSame(['k' => 'v', 'n' => ['a' => 1], 7 => 7.5, 'x' => 'dflt'],
                          is_array($got) ? $got : iterator_to_array($got));
        $this->assertSame([], $p->getItem('k')->getMetadata(), 'no metadata without tags');
        foreach ($p->getItems(['k', 'x']) as $key => $item) {
            $this->assertSame([], $item->getMetadata(), "$key: no metadata without tags");
        }
        $p->save($p->getItem('t')->set('T')->tag('a'));
        $this->assertSame(['a' => 'a'], $p->getItem('t')->getMetadata()[ItemInterface::METADATA_TAGS]);
        // Symfony's own path (versioning on) gives the same items
        $v = $this->pool();
        $v->enableVersioning();
        $vpsr = new Symfony\Component\Cache\Psr16Cache($v);
        $this->assertTrue($vpsr->set('k', 'v2'));
        $got = $vpsr->getMultiple(['k']);
        $this->assertSame(['k' => 'v2'], is_array($got) ? $got : iterator_to_array($got));
        $this->assertSame([], $v->getItem('k')->getMetadata());
    }

    /**
     * staleInvalidation with Symfony's stampede lock (LockRegistry: one of
     * its files per key hash, the default wrapper of 7.x even in the CLI):
     * the lease winner finds the lock file held by another worker, waits,
     * reads again; it must still compute and store, not serve the stale
     * value from its own lease and leave the record stale until it
     * expires.  Deterministic: another process holds the one lock file.
     */
    public function testStaleWinnerStoresWhenSymfonysLockIsHeld(): void
    {
        $lockFile = tempnam(sys_get_temp_dir(), 'mdc-sflock');
        $files = Symfony\Component\Cache\LockRegistry::setFiles([$lockFile]);
        try {
            $p1 = new SymfonyTagAwareAdapter($this->c, 'sf', 0, true);
            $p1->setCallbackWrapper([Symfony\Component\Cache\LockRegistry::class, 'compute']);
            $p2 = new SymfonyTagAwareAdapter(mdc_test_client(), 'sf', 0, true);
            $tagged = fn(string $v) => function (ItemInterface $i) use ($v) {
                $i->tag('page');
                return $v;
            };
            $this->assertSame('old', $p1->get('k', $tagged('old')));
            $this->assertTrue($p1->invalidateTags(['page']));
            // another worker holds the lock file for 300 ms
            $child = proc_open([PHP_BINARY, '-n', '-r',
                                '$f = fopen($argv[1], "r"); flock($f, LOCK_EX); echo "locked\n";'
                                . ' usleep(300000); flock($f, LOCK_UN);', $lockFile],
                               [1 => ['pipe', 'w']], $pipes);
            $this->assertSame("locked\n", fgets($pipes[1]));
            $runs = 0;
            $v = $p1->get('k', function (ItemInterface $i) use (&$runs) {
                $runs++;
                $i->tag('page');
                return 'new';
            });
            fclose($pipes[1]);
            proc_close($child);
            $this->assertSame(['new', 1], [$v, $runs], 'the winner computed once, after the lock');
            $this->assertSame('new', $p2->get('k', fn() => $this->fail('stored: a fresh hit for the others')));
            $state = null;
            $this->assertSame('new', $this->c->leaseGet('sf:k', 0, 0, $state)['value']);
            $this->assertSame(0, $state & Mdcached\Client::LEASE_STALE, 'not stale any more');
        } finally {
            Symfony\Component\Cache\LockRegistry::setFiles($files);
            unlink($lockFile);
        }
    }

    /**
     * A lease winner that stores nothing (its callback throws, or sets
     * $save = false) hands the win back: the next reader recomputes, the
     * record does not stay stale until it expires.
     */
    public function testStaleWinnerThatStoresNothingHandsTheLeaseBack(): void
    {
        $p1 = new SymfonyTagAwareAdapter($this->c, 'sf', 0, true);
        $p2 = new SymfonyTagAwareAdapter(mdc_test_client(), 'sf', 0, true);
        $this->assertSame('old', $p1->get('k', function (ItemInterface $i) {
            $i->tag('page');
            return 'old';
        }));
        $this->assertTrue($p1->invalidateTags(['page']));
        try {
            $p1->get('k', function () {
                throw new RuntimeException('backend down');
            });
            $this->fail('the exception is not passed on');
        } catch (RuntimeException $e) {
            $this->assertSame('backend down', $e->getMessage());
        }
        $this->assertSame('again', $p2->get('k', function (ItemInterface $i) {
            $i->tag('page');
            return 'again';
        }), 'the next reader won and recomputed');
        $this->assertSame('again', $p1->get('k', fn() => $this->fail('stored')));
        // a winner whose callback chooses not to save
        $this->assertTrue($p1->invalidateTags(['page']));
        $this->assertSame('unsaved', $p1->get('k', function (ItemInterface $i, bool &$save) {
            $save = false;
            return 'unsaved';
        }));
        $this->assertSame('third', $p2->get('k', fn() => 'third'), 'handed back after an unsaved recompute');
    }
}
