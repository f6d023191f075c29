// The device-side producer of drain/LAYOUT.md (layout version 1), as a library of device
// functions. It is built on its own as a relocatable code object (clang-15 -c, ld.lld-15
// -shared) and linked with an application's kernels by the code-object loader: the kernels
// call these functions as undefined externals, and a tool sets `kfd_drain_buffer` after
// loading. Only clang builtins are used (no device libraries).
//
//   void *p = kfd_drain_reserve(len, kind, producer);  // NULL: not written (drop, closed, off)
//   if (p) { ...store len payload bytes at p...; kfd_drain_commit(p); }
//
// Atomics are the GCC-style builtins, which clang lowers to system-scope atomics on amdgcn:
// what fine-grained host memory shared with the CPU and the copy engine needs.

typedef unsigned long u64;
typedef unsigned int u32;

// The device buffer's address (0: no channel, every call is a no-op). Set by the tool.
global u64 kfd_drain_buffer = 0;

#define KFD_DRAIN_MAGIC 0x4E4941524444464BUL
#define KFD_DRAIN_VERSION 1u
#define HEADER_PAGE 4096u
#define SLOT_HEADER 64u

// Header page offsets.
#define H_MAGIC 0x000
#define H_VERSION 0x008
#define H_HEADER_BYTES 0x00C
#define H_SLOT_SIZE 0x010
#define H_SLOT_COUNT 0x014
#define H_SLOT_HEADER 0x018
#define H_FLAGS 0x01C
#define H_CURSOR 0x040
#define H_RECORDS 0x080
#define H_BYTES 0x088
#define H_DROPPED 0x0C0
#define H_DROPPED_BYTES 0x0C8
#define H_STALLS 0x0D0
#define H_NOTIFIED 0x0D8
#define H_NOTIFY_MAILBOX 0x0E0
#define H_NOTIFY_ID 0x0E8
#define H_NOTIFY_VALUE 0x0EC

#define F_DROP 1u
#define F_CLOSED 2u

// Slot header offsets and flags.
#define S_SEQUENCE 0x00
#define S_COMMITTED 0x04
#define S_END 0x08
#define S_FLAGS 0x0C
#define S_CLOSER 0x10
#define SF_FULL 1u

// MSG_INTERRUPT of s_sendmsg: SIMM16[3:0] = 1, the 24 data bits in M0.
#define MSG_INTERRUPT 1

static inline global u32 *w32(u64 address) { return (global u32 *)address; }
static inline global u64 *w64(u64 address) { return (global u64 *)address; }

static inline u32 load32(u64 a) { return __atomic_load_n(w32(a), __ATOMIC_RELAXED); }
static inline u32 acquire32(u64 a) { return __atomic_load_n(w32(a), __ATOMIC_ACQUIRE); }
static inline void add64(u64 a, u64 v) { __atomic_fetch_add(w64(a), v, __ATOMIC_RELAXED); }

// 64-bit division is a long software sequence on the GPU; positions and generations stay
// below 2^32 for the first 4 GiB of a session, where the 32-bit sequence does.
static inline u64 div64(u64 a, u32 b) {
    return (a >> 32) == 0 ? (u64)((u32)a / b) : a / b;
}

// The buffer, if it is one this library can write: magic, version and sizes checked.
static u64 usable_buffer(void) {
    u64 base = __atomic_load_n(&kfd_drain_buffer, __ATOMIC_RELAXED);
    if (base == 0)
        return 0;
    if (*w64(base + H_MAGIC) != KFD_DRAIN_MAGIC || load32(base + H_VERSION) != KFD_DRAIN_VERSION ||
        load32(base + H_HEADER_BYTES) != HEADER_PAGE || load32(base + H_SLOT_HEADER) != SLOT_HEADER)
        return 0;
    // (The channel checked that S is a multiple of 256.)
    if (load32(base + H_SLOT_SIZE) < 256 || load32(base + H_SLOT_COUNT) < 2)
        return 0;
    return base;
}

// Tells the host that a slot became full, if the channel asked for it: the event's mailbox
// slot gets its trigger value, then an SQ interrupt carries the event id to the driver.
static void notify_full(u64 base) {
    u64 mailbox = *w64(base + H_NOTIFY_MAILBOX);
    if (mailbox == 0)
        return;
    u32 id = load32(base + H_NOTIFY_ID);
    __atomic_store_n(w64(mailbox), (u64)load32(base + H_NOTIFY_VALUE), __ATOMIC_RELEASE);
    __builtin_amdgcn_s_sendmsg(MSG_INTERRUPT, id & 0xFFFFFF);
    add64(base + H_NOTIFIED, 1);
}

// The release add of a commit; the producer whose add completes the slot tells the host.
static void commit_bytes(u64 base, u64 slot, u32 bytes, u32 capacity) {
    u32 before = __atomic_fetch_add(w32(slot + S_COMMITTED), bytes, __ATOMIC_RELEASE);
    if (before + bytes == capacity)
        notify_full(base);
}

static void close_slot(u64 slot, u32 end, u32 producer) {
    __atomic_store_n(w32(slot + S_END), end, __ATOMIC_RELAXED);
    __atomic_store_n(w32(slot + S_CLOSER), producer, __ATOMIC_RELAXED);
    __atomic_store_n(w32(slot + S_FLAGS), SF_FULL, __ATOMIC_RELAXED);
}

// Reserves a record of `len` payload bytes (kind and producer id are the low 16 bits of
// theirs), writes its header, returns where the payload
// goes; NULL when nothing was reserved (drop mode with no free slot, the channel closed, no
// usable buffer, kind 0, or a record larger than a slot).
global void *kfd_drain_reserve(u32 len, u32 kind, u32 producer) {
    u64 base = usable_buffer();
    kind &= 0xFFFF;
    producer &= 0xFFFF;
    if (base == 0 || kind == 0)
        return 0;
    u32 size = load32(base + H_SLOT_SIZE);
    u32 count = load32(base + H_SLOT_COUNT);
    u32 capacity = size - SLOT_HEADER;
    if (len > capacity - 8)
        return 0;
    u32 need = 8 + ((len + 7) & ~7u);
    global u64 *cursor = w64(base + H_CURSOR);
    bool stalled = false;
    for (;;) {
        u64 pos = __atomic_load_n(cursor, __ATOMIC_RELAXED);
        u64 g = div64(pos, capacity);
        u32 off = (u32)(pos - g * capacity);
        bool closes = off + need > capacity;
        u64 target = closes ? g + 1 : g;
        u32 target_off = closes ? 0 : off;
        u64 slot = base + HEADER_PAGE + (target - div64(target, count) * count) * size;
        u32 seq = acquire32(slot + S_SEQUENCE);
        if (seq != (u32)target) {
            u32 flags = acquire32(base + H_FLAGS);
            if (seq == (u32)(target - count)) {
                if (flags & F_DROP) {
                    add64(base + H_DROPPED, 1);
                    add64(base + H_DROPPED_BYTES, need);
                    return 0;
                }
                if (!stalled) {
                    stalled = true;
                    add64(base + H_STALLS, 1);
                }
            }
            if (flags & F_CLOSED)
                return 0;
            // Lossless: the slot is not drained yet; let the copy engine work.
            __builtin_amdgcn_s_sleep(4);
            continue;
        }
        u64 next = target * capacity + target_off + need;
        if (!__atomic_compare_exchange_n(cursor, &pos, next, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_RELAXED))
            continue;
        if (closes) {
            u64 old = base + HEADER_PAGE + (g - div64(g, count) * count) * size;
            close_slot(old, off, producer);
            commit_bytes(base, old, capacity - off, capacity);
        }
        u64 record = slot + SLOT_HEADER + target_off;
        *w32(record) = len;
        *w32(record + 4) = kind | producer << 16;
        return (global void *)(record + 8);
    }
}

// Commits the record whose payload `payload` (from kfd_drain_reserve) points at: closes its
// slot when it ends exactly there, then the release add that lets the slot drain.
void kfd_drain_commit(global void *payload) {
    u64 base = usable_buffer();
    if (base == 0 || payload == 0)
        return;
    u32 size = load32(base + H_SLOT_SIZE);
    u32 capacity = size - SLOT_HEADER;
    u64 record = (u64)payload - 8;
    u32 len = *w32(record);
    u32 producer = *w32(record + 4) >> 16;
    u32 need = 8 + ((len + 7) & ~7u);
    u64 rel = record - base - HEADER_PAGE;
    u64 slot = base + HEADER_PAGE + div64(rel, size) * size;
    u32 off = (u32)(record - slot - SLOT_HEADER);
    if (off + need == capacity)
        close_slot(slot, capacity, producer);
    commit_bytes(base, slot, need, capacity);
    add64(base + H_RECORDS, 1);
    add64(base + H_BYTES, need);
}

// Reserve, copy `len` bytes from `payload`, commit. Returns 1 when written, 0 when not.
int kfd_drain_write(u32 kind, u32 producer, const global u32 *payload, u32 len) {
    global u32 *p = (global u32 *)kfd_drain_reserve(len, kind, producer);
    if (p == 0)
        return 0;
    for (u32 i = 0; i < len / 4; i++)
        p[i] = payload[i];
    kfd_drain_commit(p);
    return 1;
}
