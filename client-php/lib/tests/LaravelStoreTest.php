<?php
use Illuminate\Cache\Repository;
use Mdcached\Cache\LaravelStore;
use PHPUnit\Framework\TestCase;

/** @group laravel */
final class LaravelStoreTest extends TestCase
{
    private Mdcached\Client $c;
    private LaravelStore $store;

    protected function setUp(): void
    {
        $this->c = mdc_test_client();
        $this->c->flush();
        $this->store = new LaravelStore($this->c, 'lv:');
    }

    public function testStore(): void
    {
        $s = $this->store;
        $this->assertNull($s->get('k'));
        $this->assertTrue($s->put('k', ['v'], 60));
        $this->assertSame(['v'], $s->get('k'));
        $this->assertTrue($s->putMany(['a' => 1, 'b' => 2], 60));
        $this->assertSame(['a' => 1, 'b' => 2, 'z' => null], $s->many(['a', 'b', 'z']));
        $this->assertSame(2, $s->increment('a', 1));
        $this->assertSame(1, $s->decrement('a'));
        $this->assertTrue($s->forever('f', 'ever'));
        $this->assertTrue($s->forget('f'));
        $this->assertNull($s->get('f'));
        $this->assertSame('lv:', $s->getPrefix());
        $this->assertTrue($s->flush());
        $this->assertNull($s->get('k'));
    }

    public function testRepositoryAndTags(): void
    {
        $cache = new Repository($this->store);
        $this->assertSame('x', $cache->remember('r', 60, fn() => 'x'));
        $cache->tags(['people', 'authors'])->put('john', 'John', 60);
        $cache->tags(['people'])->put('anne', 'Anne', 60);
        $cache->tags('books')->put('b1', 'Book', 60);
        $this->assertSame('John', $cache->tags(['people', 'authors'])->get('john'));
        $this->assertTrue($cache->tags('authors')->flush());
        $this->assertNull($cache->get('john'), 'flushing one tag deletes the records carrying it');
        $this->assertSame('Anne', $cache->get('anne'));
        $this->assertSame('Book', $cache->get('b1'));
        $this->assertTrue($cache->tags(['people', 'books'])->flush());
        $this->assertNull($cache->get('anne'));
        $this->assertNull($cache->get('b1'));
        $this->assertSame('x', $cache->get('r'), 'untagged records stay');
    }

    public function testTagFlushIsAtomicOnServer(): void
    {
        $cache = new Repository($this->store);
        for ($i = 0; $i < 100; $i++) {
            $cache->tags('t')->put("k$i", $i, 60);
        }
        $this->assertSame(100, $this->c->deleteByTag('laravel:lv::tag:t'), 'one server request deletes all');
        $this->assertNull($cache->get('k5'));
    }
}
