// The Swift runtime's hooks for its global and main executors (declared in the runtime's
// ConcurrencyHooks.def; libswift_Concurrency defines them, static or shared, so there is
// nothing to link). Each holds a function pointer, called with Swift's calling convention,
// or NULL for the runtime's own executor (libdispatch's queues). MainThreadExecutor sets
// them; the accessors give their addresses to Swift.
extern void *swift_task_enqueueGlobal_hook;
extern void *swift_task_enqueueMainExecutor_hook;

static inline void **ariata_enqueue_global_hook(void) { return &swift_task_enqueueGlobal_hook; }
static inline void **ariata_enqueue_main_hook(void) { return &swift_task_enqueueMainExecutor_hook; }
