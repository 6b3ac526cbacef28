/* This is a generated file, edit the .stub.php file instead.
 * Stub hash: 34cfccbb10a7eba7e884004ec1448f7b73ae5d71 */

ZEND_BEGIN_ARG_INFO_EX(arginfo_class_Mdcached_Client___construct, 0, 0, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, persistentId, IS_STRING, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_addServer, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, host, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, port, IS_LONG, 0, "11311")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, weight, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_addServers, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, servers, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_getServerList, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_class_Mdcached_Client_getServerByKey, 0, 1, MAY_BE_ARRAY|MAY_BE_FALSE)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_resetServerList, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Mdcached_Client_isPersistent arginfo_class_Mdcached_Client_resetServerList

#define arginfo_class_Mdcached_Client_isPristine arginfo_class_Mdcached_Client_resetServerList

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_setOption, 0, 2, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, option, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO(0, value, IS_MIXED, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_setOptions, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, options, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_getOption, 0, 1, IS_MIXED, 0)
	ZEND_ARG_TYPE_INFO(0, option, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_getResultCode, 0, 0, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_getResultMessage, 0, 0, IS_STRING, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Mdcached_Client_getServerResults arginfo_class_Mdcached_Client_getServerList

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_get, 0, 1, IS_MIXED, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, cacheCallback, IS_CALLABLE, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, flags, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_leaseGet, 0, 1, IS_MIXED, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, vivifyTtl, IS_LONG, 0, "0")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, recacheTtl, IS_LONG, 0, "0")
	ZEND_ARG_INFO_WITH_DEFAULT_VALUE(1, state, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, flags, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_class_Mdcached_Client_getMulti, 0, 1, MAY_BE_ARRAY|MAY_BE_FALSE)
	ZEND_ARG_TYPE_INFO(0, keys, IS_ARRAY, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, flags, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_set, 0, 2, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, value, IS_MIXED, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, tags, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_setMulti, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, items, IS_ARRAY, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, tags, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

#define arginfo_class_Mdcached_Client_add arginfo_class_Mdcached_Client_set

#define arginfo_class_Mdcached_Client_replace arginfo_class_Mdcached_Client_set

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_cas, 0, 3, _IS_BOOL, 0)
	ZEND_ARG_TYPE_MASK(0, casToken, MAY_BE_LONG|MAY_BE_STRING, NULL)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, value, IS_MIXED, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, tags, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_append, 0, 2, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, value, IS_STRING, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Mdcached_Client_prepend arginfo_class_Mdcached_Client_append

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_delete, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_deleteStale, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_deleteMulti, 0, 1, IS_ARRAY, 0)
	ZEND_ARG_TYPE_INFO(0, keys, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_class_Mdcached_Client_increment, 0, 1, MAY_BE_LONG|MAY_BE_FALSE)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, offset, IS_LONG, 0, "1")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, initialValue, IS_LONG, 0, "0")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

#define arginfo_class_Mdcached_Client_decrement arginfo_class_Mdcached_Client_increment

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_touch, 0, 2, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, ttl, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_flush, 0, 0, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, delay, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_class_Mdcached_Client_getStats, 0, 0, MAY_BE_ARRAY|MAY_BE_FALSE)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, type, IS_STRING, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_class_Mdcached_Client_getVersion, 0, 0, MAY_BE_ARRAY|MAY_BE_FALSE)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_class_Mdcached_Client_getByTag, 0, 1, MAY_BE_ARRAY|MAY_BE_FALSE)
	ZEND_ARG_TYPE_MASK(0, tag, MAY_BE_LONG|MAY_BE_STRING|MAY_BE_ARRAY, NULL)
	ZEND_ARG_TYPE_MASK(0, tvals, MAY_BE_LONG|MAY_BE_ARRAY|MAY_BE_NULL, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_class_Mdcached_Client_deleteByTag, 0, 1, MAY_BE_LONG|MAY_BE_FALSE)
	ZEND_ARG_TYPE_MASK(0, tag, MAY_BE_LONG|MAY_BE_STRING|MAY_BE_ARRAY, NULL)
	ZEND_ARG_TYPE_MASK(0, tvals, MAY_BE_LONG|MAY_BE_ARRAY|MAY_BE_NULL, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_class_Mdcached_Client_deleteByTagStale, 0, 1, MAY_BE_LONG|MAY_BE_FALSE)
	ZEND_ARG_TYPE_MASK(0, tag, MAY_BE_LONG|MAY_BE_STRING|MAY_BE_ARRAY, NULL)
	ZEND_ARG_TYPE_MASK(0, tvals, MAY_BE_LONG|MAY_BE_ARRAY|MAY_BE_NULL, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_class_Mdcached_Client_tagPush, 0, 2, MAY_BE_STRING|MAY_BE_FALSE)
	ZEND_ARG_TYPE_MASK(0, tag, MAY_BE_LONG|MAY_BE_STRING, NULL)
	ZEND_ARG_TYPE_INFO(0, value, IS_MIXED, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, tval, IS_LONG, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_tagPop, 0, 1, IS_MIXED, 0)
	ZEND_ARG_TYPE_MASK(0, tag, MAY_BE_LONG|MAY_BE_STRING, NULL)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, tval, IS_LONG, 1, "null")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_cmpSet, 0, 3, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, expect, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO(0, desired, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_class_Mdcached_Client_fetchAdd, 0, 2, MAY_BE_LONG|MAY_BE_FALSE)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, delta, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_class_Mdcached_Client_readAndClear, 0, 1, MAY_BE_LONG|MAY_BE_FALSE)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

#define arginfo_class_Mdcached_Client_quit arginfo_class_Mdcached_Client_resetServerList

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_setSaslAuthData, 0, 2, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, username, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, password, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_setTls, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, options, IS_ARRAY, 1)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_class_Mdcached_Client_tagOf, 0, 1, IS_ARRAY, 0)
	ZEND_ARG_TYPE_INFO(0, tag, IS_STRING, 0)
ZEND_END_ARG_INFO()


ZEND_METHOD(Mdcached_Client, __construct);
ZEND_METHOD(Mdcached_Client, addServer);
ZEND_METHOD(Mdcached_Client, addServers);
ZEND_METHOD(Mdcached_Client, getServerList);
ZEND_METHOD(Mdcached_Client, getServerByKey);
ZEND_METHOD(Mdcached_Client, resetServerList);
ZEND_METHOD(Mdcached_Client, isPersistent);
ZEND_METHOD(Mdcached_Client, isPristine);
ZEND_METHOD(Mdcached_Client, setOption);
ZEND_METHOD(Mdcached_Client, setOptions);
ZEND_METHOD(Mdcached_Client, getOption);
ZEND_METHOD(Mdcached_Client, getResultCode);
ZEND_METHOD(Mdcached_Client, getResultMessage);
ZEND_METHOD(Mdcached_Client, getServerResults);
ZEND_METHOD(Mdcached_Client, get);
ZEND_METHOD(Mdcached_Client, leaseGet);
ZEND_METHOD(Mdcached_Client, getMulti);
ZEND_METHOD(Mdcached_Client, set);
ZEND_METHOD(Mdcached_Client, setMulti);
ZEND_METHOD(Mdcached_Client, add);
ZEND_METHOD(Mdcached_Client, replace);
ZEND_METHOD(Mdcached_Client, cas);
ZEND_METHOD(Mdcached_Client, append);
ZEND_METHOD(Mdcached_Client, prepend);
ZEND_METHOD(Mdcached_Client, delete);
ZEND_METHOD(Mdcached_Client, deleteStale);
ZEND_METHOD(Mdcached_Client, deleteMulti);
ZEND_METHOD(Mdcached_Client, increment);
ZEND_METHOD(Mdcached_Client, decrement);
ZEND_METHOD(Mdcached_Client, touch);
ZEND_METHOD(Mdcached_Client, flush);
ZEND_METHOD(Mdcached_Client, getStats);
ZEND_METHOD(Mdcached_Client, getVersion);
ZEND_METHOD(Mdcached_Client, getByTag);
ZEND_METHOD(Mdcached_Client, deleteByTag);
ZEND_METHOD(Mdcached_Client, deleteByTagStale);
ZEND_METHOD(Mdcached_Client, tagPush);
ZEND_METHOD(Mdcached_Client, tagPop);
ZEND_METHOD(Mdcached_Client, cmpSet);
ZEND_METHOD(Mdcached_Client, fetchAdd);
ZEND_METHOD(Mdcached_Client, readAndClear);
ZEND_METHOD(Mdcached_Client, quit);
ZEND_METHOD(Mdcached_Client, setSaslAuthData);
ZEND_METHOD(Mdcached_Client, setTls);
ZEND_METHOD(Mdcached_Client, tagOf);


static const zend_function_entry class_Mdcached_Client_methods[] = {
	ZEND_ME(Mdcached_Client, __construct, arginfo_class_Mdcached_Client___construct, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, addServer, arginfo_class_Mdcached_Client_addServer, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, addServers, arginfo_class_Mdcached_Client_addServers, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, getServerList, arginfo_class_Mdcached_Client_getServerList, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, getServerByKey, arginfo_class_Mdcached_Client_getServerByKey, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, resetServerList, arginfo_class_Mdcached_Client_resetServerList, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, isPersistent, arginfo_class_Mdcached_Client_isPersistent, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, isPristine, arginfo_class_Mdcached_Client_isPristine, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, setOption, arginfo_class_Mdcached_Client_setOption, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, setOptions, arginfo_class_Mdcached_Client_setOptions, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, getOption, arginfo_class_Mdcached_Client_getOption, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, getResultCode, arginfo_class_Mdcached_Client_getResultCode, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, getResultMessage, arginfo_class_Mdcached_Client_getResultMessage, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, getServerResults, arginfo_class_Mdcached_Client_getServerResults, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, get, arginfo_class_Mdcached_Client_get, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, leaseGet, arginfo_class_Mdcached_Client_leaseGet, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, getMulti, arginfo_class_Mdcached_Client_getMulti, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, set, arginfo_class_Mdcached_Client_set, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, setMulti, arginfo_class_Mdcached_Client_setMulti, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, add, arginfo_class_Mdcached_Client_add, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, replace, arginfo_class_Mdcached_Client_replace, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, cas, arginfo_class_Mdcached_Client_cas, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, append, arginfo_class_Mdcached_Client_append, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, prepend, arginfo_class_Mdcached_Client_prepend, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, delete, arginfo_class_Mdcached_Client_delete, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, deleteStale, arginfo_class_Mdcached_Client_deleteStale, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, deleteMulti, arginfo_class_Mdcached_Client_deleteMulti, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, increment, arginfo_class_Mdcached_Client_increment, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, decrement, arginfo_class_Mdcached_Client_decrement, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, touch, arginfo_class_Mdcached_Client_touch, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, flush, arginfo_class_Mdcached_Client_flush, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, getStats, arginfo_class_Mdcached_Client_getStats, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, getVersion, arginfo_class_Mdcached_Client_getVersion, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, getByTag, arginfo_class_Mdcached_Client_getByTag, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, deleteByTag, arginfo_class_Mdcached_Client_deleteByTag, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, deleteByTagStale, arginfo_class_Mdcached_Client_deleteByTagStale, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, tagPush, arginfo_class_Mdcached_Client_tagPush, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, tagPop, arginfo_class_Mdcached_Client_tagPop, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, cmpSet, arginfo_class_Mdcached_Client_cmpSet, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, fetchAdd, arginfo_class_Mdcached_Client_fetchAdd, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, readAndClear, arginfo_class_Mdcached_Client_readAndClear, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, quit, arginfo_class_Mdcached_Client_quit, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, setSaslAuthData, arginfo_class_Mdcached_Client_setSaslAuthData, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, setTls, arginfo_class_Mdcached_Client_setTls, ZEND_ACC_PUBLIC)
	ZEND_ME(Mdcached_Client, tagOf, arginfo_class_Mdcached_Client_tagOf, ZEND_ACC_PUBLIC|ZEND_ACC_STATIC)
	ZEND_FE_END
};


static const zend_function_entry class_Mdcached_Exception_methods[] = {
	ZEND_FE_END
};

static zend_class_entry *register_class_Mdcached_Client(void)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Mdcached", "Client", class_Mdcached_Client_methods);
	class_entry = zend_register_internal_class_ex(&ce, NULL);

	return class_entry;
}

static zend_class_entry *register_class_Mdcached_Exception(zend_class_entry *class_entry_RuntimeException)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Mdcached", "Exception", class_Mdcached_Exception_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_RuntimeException);

	return class_entry;
}
