--TEST--
Mdcached\Client::OPT_POOL_BPF: the pool description reaches libmdcached's kernel path (mdc_pool_set_bpf): off by default, a description that cannot be opened refused with the library's reason, a malformed value refused, off again; tag deletes stay on TCP meanwhile (the path itself, as root: tests/test_pool_bpf.sh)
--FILE--
<?php
require __DIR__ . '/mdc_test.inc';
use Mdcached\Client;
$tmp = getenv('MDC_TEST_TMP');
$c = new Client();
$c->addServer(getenv('MDC_TEST_HOST'), (int)getenv('MDC_TEST_PORT'));
check(Client::OPT_POOL_BPF === 11, 'constant');
check($c->getOption(Client::OPT_POOL_BPF) === null, 'off by default');
// the library opens the description: its reason comes back
check($c->setOption(Client::OPT_POOL_BPF, "$tmp/no-such-pool") === false,
      'a description that is not there is refused');
check($c->getResultCode() === Client::RES_INVALID_ARGUMENTS, 'code');
$m = $c->getResultMessage();
check(str_contains($m, 'kernel path: ') && str_contains($m, 'no-such-pool'),
      "libmdcached's reason: $m");
check($c->getOption(Client::OPT_POOL_BPF) === null, 'still off');
check($c->setOption(Client::OPT_POOL_BPF, "$tmp/d,1,2,3") === false,
      'four fields refused');
check(str_contains($c->getResultMessage(), 'DESC[,NEED[,MS]]'),
      $c->getResultMessage());
check($c->setOption(Client::OPT_POOL_BPF, "$tmp/d,65") === false,
      'need over 64 refused: ' . $c->getResultMessage());
check($c->setOption(Client::OPT_POOL_BPF, '') === true, 'off: ""');
check($c->setOption(Client::OPT_POOL_BPF, null) === true, 'off: null');
check($c->getOption(Client::OPT_POOL_BPF) === null, 'reads off');
// tag deletes work without it (the TCP fan-out)
check($c->set('pb1', 'v', 0, [1 => 4242]), 'tagged record');
check($c->deleteByTag(1, 4242) === 1, 'deleted over TCP');
check($c->get('pb1') === false, 'gone');
echo "done\n";
?>
--EXPECT--
done
