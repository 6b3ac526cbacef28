<?php
use Mdcached\Cache\CacheItemPool;
use PHPUnit\Framework\TestCase;

final class CacheItemPoolTest extends TestCase
{
    private Mdcached\Client $c;
    private CacheItemPool $pool;

    protected function setUp(): void
    {
        $this->c = mdc_test_client();
        $this->c->flush();
        $this->pool = new CacheItemPool($this->c, 'p6');
    }

    public function testMissHitSave(): void
    {
        $item = $this->pool->getItem('k');
        $this->assertFalse($item->isHit());
        $this->assertNull($item->get());
        $this->assertSame('k', $item->getKey());
        $this->assertTrue($this->pool->save($item->set(['x'])));
        $hit = $this->pool->getItem('k');
        $this->assertTrue($hit->isHit());
        $this->assertSame(['x'], $hit->get());
        $this->assertTrue($this->pool->hasItem('k'));
    }

    public function testDeferredAndCommit(): void
    {
        $this->assertTrue($this->pool->saveDeferred($this->pool->getItem('a')->set(1)));
        $this->assertTrue($this->pool->saveDeferred($this->pool->getItem('b')->set(2)));
        $this->assertFalse($this->c->get('p6:a'), 'deferred: not on the server yet');
        $this->assertTrue($this->pool->commit());
        $this->assertSame(1, $this->c->get('p6:a'));
        $items = $this->pool->getItems(['a', 'b', 'c']);
        $this->assertSame([true, true, false], array_map(fn($i) => $i->isHit(), array_values(iterator_to_array($items))));
        // a deferred item is visible to the pool before an explicit commit
        $this->pool->saveDeferred($this->pool->getItem('d')->set(4));
        $this->assertTrue($this->pool->hasItem('d'));
    }

    public function testDeleteAndClear(): void
    {
        $this->pool->save($this->pool->getItem('a')->set(1));
        $this->pool->save($this->pool->getItem('b')->set(2));
        $this->c->set('foreign', 1);
        $this->assertTrue($this->pool->deleteItem('a'));
        $this->assertTrue($this->pool->deleteItems(['b', 'zz']));
        $this->assertFalse($this->pool->hasItem('b'));
        $this->pool->save($this->pool->getItem('c')->set(3));
        $this->assertTrue($this->pool->clear());
        $this->assertFalse($this->pool->hasItem('c'));
        $this->assertSame(1, $this->c->get('foreign'));
    }

    public function testExpiry(): void
    {
        $this->pool->save($this->pool->getItem('int')->set(1)->expiresAfter(1));
        $this->pool->save($this->pool->getItem('di')->set(1)->expiresAfter(new DateInterval('PT1S')));
        $this->pool->save($this->pool->getItem('at')->set(1)->expiresAt(new DateTime('+1 hour')));
        $this->pool->save($this->pool->getItem('past')->set(1)->expiresAt(new DateTime('-1 hour')));
        $this->pool->save($this->pool->getItem('long')->set(1)->expiresAfter(40 * 86400));
        $this->assertFalse($this->pool->hasItem('past'));
        $this->assertTrue($this->pool->hasItem('long'), 'TTL over 30 days sent as a Unix time');
        mdc_sleep_past_ttl(1);
        $this->assertFalse($this->pool->hasItem('int'));
        $this->assertFalse($this->pool->hasItem('di'));
        $this->assertTrue($this->pool->hasItem('at'));
    }

    public function testReservedKeys(): void
    {
        foreach (str_split('{}()/\\@:') as $ch) {
            try {
                $this->pool->getItem("a{$ch}b");
                $this->fail("accepted $ch");
            } catch (\Psr\Cache\InvalidArgumentException $e) {
                $this->addToAssertionCount(1);
            }
        }
        $this->expectException(\Psr\Cache\InvalidArgumentException::class);
        $this->pool->deleteItems(['ok', '']);
    }
}
