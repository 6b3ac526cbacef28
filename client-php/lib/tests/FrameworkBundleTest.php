<?php
use Mdcached\Cache\SymfonyTagAwareAdapter;
use PHPUnit\Framework\TestCase;
use Symfony\Contracts\Cache\ItemInterface;

/**
 * The full wiring with Debian's FrameworkBundle 5.4: a kernel whose
 * framework.cache config (cache.app and two pools) uses the adapter and a
 * client from MDCACHED_DSN, booted, the pools taken from the container.
 * @group framework-bundle
 */
final class FrameworkBundleTest extends TestCase
{
    private static string $dir;

    public static function setUpBeforeClass(): void
    {
        require_once __DIR__ . '/fixtures/FrameworkKernel.php';
        self::$dir = sys_get_temp_dir() . '/mdc-fb-' . getmypid();
    }

    public static function tearDownAfterClass(): void
    {
        if (is_dir(self::$dir)) {
            $it = new RecursiveIteratorIterator(new RecursiveDirectoryIterator(self::$dir, FilesystemIterator::SKIP_DOTS),
                                                RecursiveIteratorIterator::CHILD_FIRST);
            foreach ($it as $f) {
                $f->isDir() ? rmdir($f->getPathname()) : unlink($f->getPathname());
            }
            rmdir(self::$dir);
        }
    }

    public function testPoolsFromTheContainer(): void
    {
        $c = mdc_test_client();
        $c->flush();
        $_SERVER['MDCACHED_DSN'] = $_ENV['MDCACHED_DSN'] = 'mdcached://127.0.0.1:' . getenv('MDC_TEST_PORT');
        $kernel = new MdcFrameworkKernel(self::$dir);
        $kernel->boot();
        $container = $kernel->getContainer();

        $pool = $container->get('test.app.tagged');
        $this->assertInstanceOf(SymfonyTagAwareAdapter::class, $pool);
        $calls = 0;
        $compute = function (ItemInterface $item) use (&$calls) {
            $item->tag(['article-1']);
            return ++$calls;
        };
        $this->assertSame(1, $pool->get('page', $compute));
        $this->assertSame(1, $pool->get('page', $compute));
        $this->assertTrue($pool->invalidateTags(['article-1']));
        $this->assertSame(2, $pool->get('page', $compute));

        // each pool has its own namespace (FrameworkBundle's seed)
        $other = $container->get('test.app.other');
        $other->save($other->getItem('page')->set('other'));
        $this->assertSame(2, $pool->get('page', $compute));
        $this->assertSame('other', $other->getItem('page')->get());

        // cache.app is the adapter too, and the pool clearer clears a pool
        $app = $container->get('test.cache.app');
        $this->assertInstanceOf(SymfonyTagAwareAdapter::class, $app);
        $app->save($app->getItem('a')->set('A'));
        $this->assertTrue($container->get('cache.global_clearer')->clearPool('app.tagged'));
        $this->assertFalse($pool->hasItem('page'));
        $this->assertTrue($other->hasItem('page'));
        $this->assertTrue($app->hasItem('a'));

        // default_lifetime from the pool's configuration
        $short = $container->get('test.app.short');
        $short->save($short->getItem('short')->set(1));
        $pool->save($pool->getItem('long')->set(1));
        mdc_sleep_past_ttl(1);
        $this->assertFalse($short->hasItem('short'));
        $this->assertTrue($pool->hasItem('long'));
        $this->assertTrue($other->hasItem('page'));
        $kernel->shutdown();
    }

    public function testTheDocumentHoldsTheseFiles(): void
    {
        $doc = file_get_contents(__DIR__ . '/../../../docs/client-php.md');
        foreach (['services.yaml', 'cache.yaml'] as $f) {
            $block = preg_replace('/^/m', '    ', rtrim(file_get_contents(__DIR__ . "/fixtures/symfony/$f"))) . "\n";
            $this->assertStringContainsString($block, $doc, "docs/client-php.md shows fixtures/symfony/$f");
        }
    }
}
