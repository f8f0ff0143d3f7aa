/* cuport light-mode stub: declarations live in cuda_shim.h. No include guard: as the C standard's <assert.h>,
   each inclusion defines assert anew after the current NDEBUG. A failing device assert stops its thread in
   CUDA; the translators see the call below (porter/translate/kernel/asserts.py). */
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : __cuport_assert_fail())
#endif
