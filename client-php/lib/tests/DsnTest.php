<?php
use Mdcached\Cache\Dsn;
use Mdcached\Cache\InvalidArgumentException;
use Mdcached\Client;
use PHPUnit\Framework\TestCase;

/** mdcached:// DSNs (Dsn::createClient, SymfonyTagAwareAdapter::createConnection). */
final class DsnTest extends TestCase
{
    public function testParse(): void
    {
        $cases = [
            'mdcached://cache1' => [[['cache1', 11311, 0]], []],
            'mdcached://10.0.0.2:11400' => [[['10.0.0.2', 11400, 0]], []],
            'mdcached://[::1]:11400?weight=3' => [[['::1', 11400, 3]], []],
            'mdcached://[::1]' => [[['::1', 11311, 0]], []],
            'mdcached:///run/mdcached.sock' => [[['/run/mdcached.sock', 0, 0]], []],
            'mdcached://%2Frun%2Fmdcached.sock' => [[['/run/mdcached.sock', 0, 0]], []],
            'mdcached://app:s%40cr%2Ft@h:1?persistent_id=web' =>
                [[['h', 1, 0]], ['persistent_id' => 'web', 'user' => 'app', 'password' => 's@cr/t']],
            'mdcached://app:pw@/run/m.sock' => [[['/run/m.sock', 0, 0]], ['user' => 'app', 'password' => 'pw']],
            'mdcached:?host[h1:11311]&host[h2:11312]=2&host[/run/m.sock]&tls=1&tls_ca_file=/etc/ca.pem' =>
                [[['h1', 11311, 0], ['h2', 11312, 2], ['/run/m.sock', 0, 0]], ['tls' => '1', 'tls_ca_file' => '/etc/ca.pem']],
            'mdcached://h?connect_timeout=250&serializer=igbinary' =>
                [[['h', 11311, 0]], ['connect_timeout' => '250', 'serializer' => 'igbinary']],
        ];
        foreach ($cases as $dsn => $want) {
            $this->assertSame($want, Dsn::parse($dsn), $dsn);
        }
    }

    public function testBadDsnsAreClearErrors(): void
    {
        $bad = [
            'memcached://h' => 'must start with "mdcached:"',
            'mdcached://' => 'names no server',
            'mdcached://h:99999' => 'out of range',
            'mdcached://h:port' => 'port must be',
            'mdcached://::1:11311' => 'IPv6 address goes in brackets',
            'mdcached://h/path' => 'a path',
            'mdcached://h?nonsense=1' => 'unknown option "nonsense"',
            'mdcached://h?host=x' => 'host[h1:port]',
            'mdcached://h?tls=maybe' => 'tls must be a boolean',
            'mdcached://user:hunter2@nowhere:1/x' => 'a path',
        ];
        foreach ($bad as $dsn => $msg) {
            try {
                Dsn::createClient($dsn);
                $this->fail("accepted $dsn");
            } catch (InvalidArgumentException $e) {
                $this->assertStringContainsString($msg, $e->getMessage(), $dsn);
                $this->assertStringNotContainsString('hunter2', $e->getMessage(), 'no password in messages');
            }
        }
        $this->expectException(InvalidArgumentException::class);
        Dsn::createClient([]);
    }

    private static function port(): int
    {
        return (int)getenv('MDC_TEST_PORT');
    }

    public function testClientsWork(): void
    {
        $p = self::port();
        $sock = getenv('MDC_TEST_SOCK');
        foreach (["mdcached://127.0.0.1:$p", "mdcached:///$sock", 'mdcached://' . rawurlencode($sock),
                  ["mdcached://127.0.0.1:$p", "mdcached://$sock"], "mdcached:?host[127.0.0.1:$p]=1&host[$sock]=1"] as $dsn) {
            $c = Dsn::createClient($dsn);
            $name = json_encode($dsn);
            $this->assertTrue($c->set('dsn', $name, 0, ['dsn-tag']), $name . ': ' . $c->getResultMessage());
            $this->assertSame($name, $c->get('dsn'), $name);
            $this->assertSame(is_array($dsn) || str_contains($dsn, 'host[') ? 2 : 1, count($c->getServerList()), $name);
        }
        $this->assertSame(['127.0.0.1', $sock], array_map(fn($s) => $s['host'],
            Dsn::createClient(["mdcached://127.0.0.1:$p", "mdcached://$sock"])->getServerList()));
    }

    private function rawClient(): Client
    {
        return mdc_test_client();
    }

    public function testOptions(): void
    {
        $p = self::port();
        $pid = 'dsn-test-' . getmypid();
        $a = Dsn::createClient("mdcached://127.0.0.1:$p?persistent_id=$pid&connect_timeout=321&serializer=igbinary");
        $this->assertTrue($a->isPersistent());
        $this->assertSame(321, $a->getOption(Client::OPT_CONNECT_TIMEOUT));
        $this->assertSame(Client::SERIALIZER_IGBINARY, $a->getOption(Client::OPT_SERIALIZER));
        $z = Dsn::createClient("mdcached://127.0.0.1:$p?compression=true&compression_type=zstd&prefix=app_");
        $this->assertTrue($z->getOption(Client::OPT_COMPRESSION));
        $this->assertSame(Client::COMPRESSION_ZSTD, $z->getOption(Client::OPT_COMPRESSION_TYPE));
        $this->assertSame('app_', $z->getOption(Client::OPT_PREFIX));
        $this->assertTrue($z->set('zk', str_repeat('z', 5000)));
        $this->assertSame(str_repeat('z', 5000), $this->rawClient()->get('app_zk'));
        $b = Dsn::createClient("mdcached://127.0.0.1:$p", ['persistent_id' => $pid]);
        $this->assertCount(1, $b->getServerList(), 'the persistent client holds its server once');
        $this->assertSame(200, Dsn::createClient("mdcached://127.0.0.1:$p", ['read_timeout' => 200])->getOption(Client::OPT_READ_TIMEOUT), '$options');

        // credentials go to the server: this one has no --auth-file
        $c = Dsn::createClient("mdcached://someone:pw@127.0.0.1:$p");
        $this->assertFalse($c->get('k'));
        $this->assertSame(Client::RES_NOT_SUPPORTED, $c->getResultCode(), $c->getResultMessage());

        // TLS options go to setTls(): a CA file that cannot be loaded is refused
        try {
            Dsn::createClient("mdcached://127.0.0.1:$p?tls_ca_file=/nonexistent/ca.pem");
            $this->fail('tls_ca_file not applied');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString('TLS', $e->getMessage());
        }
        // and tls=1 makes the plain server unreachable
        $t = Dsn::createClient("mdcached://127.0.0.1:$p?tls=1&connect_timeout=500&read_timeout=500");
        $this->assertFalse($t->set('k', 1));
        $this->assertNotSame(Client::RES_SUCCESS, $t->getResultCode());
    }
}
