<?php
use Mdcached\Cache\SymfonyTagAwareAdapter;
use PHPUnit\Framework\TestCase;
use Symfony\Component\Cache\Adapter\TagAwareAdapterInterface;
use Symfony\Contracts\Cache\ItemInterface;
use Symfony\Contracts\Cache\TagAwareCacheInterface;

/** @group symfony */
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
        sleep(2);
        $this->assertFalse($p->getItem('e1')->isHit());
        // nothing findable by the tag, and invalidating it finds nothing
        $this->assertSame([], $this->c->getByTag("sf:\0tags\0exp"));
        $this->assertSame(0, $this->c->deleteByTag("sf:\0tags\0exp"));
        // the server's expiry sweep (run-phpunit.sh: every 100 ms, a tenth
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
}
