/*
 * The idempotency-key world of retrylab (src/model/step.rs, src/model/http.rs) in Promela, for one protocol:
 * unique-index claim, a lease, fencing on or off, per-client keys, one operation per client with the same body,
 * no external provider, keys in the same database as the payments. Written for this project from retrylab's
 * transition relation, action by action; the file that includes this one sets the parameters:
 *
 *   CLIENTS         1 or 2 (the macros below spell out "some client" and "some process" for these sizes)
 *   MAX_ATTEMPTS    the clients' max-attempts
 *   FENCING         1: a completion commits only while the record still carries the job's token
 *   DROP_RESPONSES, CRASHES, EARLY_TIMEOUTS, PAUSES   the fault budgets
 *
 * Every action is one d_step, so a SPIN state is a retrylab state (no intermediate states), and every field
 * that is meaningless (an idle process's job, an empty response slot, a free record) is zeroed, so the encoding
 * is one-to-one: partial-order reduction removes nothing (every step reads or writes globals), and SPIN stores
 * exactly the states retrylab visits (186,704 here). Only SPIN's dead-variable elimination differs: out_pay is
 * never read, so in the unfenced twins, where it can be 1 or 2 with all else equal, SPIN merges those states
 * unless run with spin -o2 (run.sh count does; tests/checker/spin_twin.rs compares the counts).
 *
 * Encoding, and the assumptions it relies on (each asserted where it could break):
 * - The network holds each client's in-flight requests as a bit set over attempt numbers: the fault budgets
 *   have no duplications, so an attempt's request is in flight at most once.
 * - It holds at most one response per client, for the attempt the client waits for: a server answers only the
 *   current attempt (is_current_attempt) and a client leaving an attempt purges its responses (purge_abandoned).
 * - Tokens are stored as token + 1 in a job (0: none), as retrylab's Option<u8>. They are per key: ver[] is the
 *   version column of each key's row (the last token issued for it; 0: never claimed), as retrylab's versions.
 * - The ghost ledger is the payments table (npay[]: payments per operation; a payment's id names its operation
 *   and execution number, PAYMENT) and first_success; the safety properties are asserts
 *   at the transitions where retrylab raises their events; the two liveness properties are asserts at quiescent
 *   states (no action enabled but faults), where retrylab judges them.
 */

#define PROCS 2
#define ATTEMPTS_MAX 7  /* attempt numbers fit the request bit set of a byte (bit 0 unused) */
/* A payment's id, as retrylab's Payment: the operation (here its client: one operation each) and its execution
   number within it, 1-based, as one byte (0: no payment). Not a position in commit order. */
#define EXECUTIONS_MAX 7
#define PAYMENT(c, n) ((c) * 8 + (n))
#define PAID_CLIENT(id) ((id) / 8)

/* client phases */
#define READY 0
#define READY_409 1     /* Ready { after_conflict: true }: told 409 with Retry-After */
#define WAITING 2
#define DONE 3
/* outcomes */
#define PENDING 0
#define SUCCEEDED 1
#define GAVE_UP 3
/* response codes on the wire (0: no message) */
#define NO_MSG 0
#define C201 1
#define C200 2
#define C409 3
/* job steps (0: the process is idle) */
#define IDLE 0
#define CLAIM 1
#define EFFECT 2
#define COMMIT 3
#define RESPOND 4
/* record status */
#define FREE 0
#define IN_PROGRESS 1
#define COMPLETED 2

/* clients */
byte phase[CLIENTS];
byte attempts[CLIENTS];
byte charged[CLIENTS];
byte outcome[CLIENTS];
byte out_pay[CLIENTS];
/* network */
byte req[CLIENTS];       /* bit a set: attempt a's request is in flight */
byte resp[CLIENTS];      /* the response in flight to this client, or NO_MSG */
byte resp_att[CLIENTS];
byte resp_pay[CLIENTS];
/* server processes */
byte step[PROCS];
byte jc[PROCS];          /* the job's request: client, attempt */
byte ja[PROCS];
byte jtok[PROCS];        /* token + 1, 0: holds no claim */
byte jcode[PROCS];       /* at RESPOND: the answer */
byte jpay[PROCS];
/* the store: one record per client (per-client keys, one operation each), payments, the keys' versions */
byte rec[CLIENTS];
byte rec_tok[CLIENTS];
bit rec_exp[CLIENTS];
byte rec_pay[CLIENTS];
byte npay[CLIENTS];      /* the payments table as retrylab's ledger counts it: payments committed per operation */
byte ver[CLIENTS];       /* the key's version: the last claim token issued for it */
/* ghost ledger of responses: the first success payload sent per operation */
bit fs[CLIENTS];
byte fs_pay[CLIENTS];
/* fault budgets */
byte drop_resp = DROP_RESPONSES;
byte crashes = CRASHES;
byte early_to = EARLY_TIMEOUTS;
byte pauses = PAUSES;

/* temporaries of one d_step, not part of the state */
hidden byte t_c, t_a, t_code, t_pay, t_n;

/* Scenario hooks: compiled with -DREACH_<NAME>, reaching the scenario is an assertion violation, which is how
   the bench shows that SPIN's search reaches it. */
#ifdef REACH_FENCED
#define HOOK_FENCED assert(false)
#else
#define HOOK_FENCED skip
#endif
#ifdef REACH_TAKEOVER
#define HOOK_TAKEOVER assert(false)
#else
#define HOOK_TAKEOVER skip
#endif
#ifdef REACH_SLOW_OWNER
#define HOOK_SLOW_OWNER assert(false)
#else
#define HOOK_SLOW_OWNER skip
#endif

/* ---- enabling conditions (shared by the actions and the quiescence check) ---- */

#define JOB_IS(p, c, a) (step[p] != IDLE && jc[p] == (c) && ja[p] == (a))
#define IN_SERVER(c, a) (JOB_IS(0, c, a) || JOB_IS(1, c, a))
/* attempt_alive: something of the client's current attempt is still on its way */
#define ATTEMPT_ALIVE(c) ((req[c] & (1 << attempts[c])) != 0 \
    || (resp[c] != NO_MSG && resp_att[c] == attempts[c]) || IN_SERVER(c, attempts[c]))
/* owner_alive: a live process holds claim t on client c's key and has not committed */
#define HOLDS(p, c, t) (step[p] != IDLE && step[p] != RESPOND && jc[p] == (c) && jtok[p] == (t) + 1)
#define OWNER_ALIVE(c, t) (HOLDS(0, c, t) || HOLDS(1, c, t))
/* may_send, with Retry-After: after a 409, wait while the key is in_progress under a live lease */
#define CAN_SEND(c) ((phase[c] == READY || phase[c] == READY_409) && charged[c] < MAX_ATTEMPTS \
    && !(phase[c] == READY_409 && rec[c] == IN_PROGRESS && !rec_exp[c]))
#define CAN_TIME_OUT(c) (phase[c] == WAITING && (!ATTEMPT_ALIVE(c) || early_to > 0))
#define LEASE_LIVE(c) (rec[c] == IN_PROGRESS && !rec_exp[c])
#define CAN_EXPIRE(c) (LEASE_LIVE(c) && (!OWNER_ALIVE(c, rec_tok[c]) || pauses > 0))
/* any idle process may take a delivered request */
#define IS_IDLE(p) (step[p] == IDLE)

/* Non-fault actions of client c (and of what concerns its key): a send, a timeout of a lost attempt, a
   delivery, a lease running out on a dead owner. */
#define CLIENT_MOVES(c) (CAN_SEND(c) || (phase[c] == WAITING && !ATTEMPT_ALIVE(c)) || resp[c] != NO_MSG \
    || (req[c] != 0 && (step[0] == IDLE || step[1] == IDLE)) \
    || (LEASE_LIVE(c) && !OWNER_ALIVE(c, rec_tok[c])))
#if CLIENTS == 1
#define MOVES_BUT_FAULTS (CLIENT_MOVES(0) || step[0] != IDLE || step[1] != IDLE)
#define NO_STUCK_KEY (!LEASE_LIVE(0))
#define RESOLVED (phase[0] == DONE && outcome[0] != GAVE_UP && outcome[0] != PENDING)
#elif CLIENTS == 2
#define MOVES_BUT_FAULTS (CLIENT_MOVES(0) || CLIENT_MOVES(1) || step[0] != IDLE || step[1] != IDLE)
#define NO_STUCK_KEY (!LEASE_LIVE(0) && !LEASE_LIVE(1))
#define RESOLVED (phase[0] == DONE && outcome[0] != GAVE_UP && outcome[0] != PENDING \
    && phase[1] == DONE && outcome[1] != GAVE_UP && outcome[1] != PENDING)
#else
#error "CLIENTS must be 1 or 2"
#endif

/* ---- effects ---- */

/* t_n = effects_of(client c): the payments committed for its operation */
inline count_effects(c) {
    t_n = npay[c]
}

/* purge_abandoned: leaving its attempt closes the client's connection, responses to it are gone */
inline purge(c) {
    resp[c] = NO_MSG; resp_att[c] = 0; resp_pay[c] = 0
}

inline send(c) {
    purge(c);
    attempts[c]++;
    assert(attempts[c] <= ATTEMPTS_MAX);
    charged[c]++;
    phase[c] = WAITING;
    assert((req[c] & (1 << attempts[c])) == 0);
    req[c] = req[c] | (1 << attempts[c])
}

/* finish_op of the client's only operation */
inline finish(c, kind, payload) {
    purge(c);
    outcome[c] = kind; out_pay[c] = payload;
    attempts[c] = 0; charged[c] = 0; phase[c] = DONE
}

inline receive(c) {
    t_code = resp[c]; t_a = resp_att[c]; t_pay = resp_pay[c];
    resp[c] = NO_MSG; resp_att[c] = 0; resp_pay[c] = 0;
    if
    :: phase[c] == WAITING && attempts[c] == t_a ->
        if
        :: t_code == C201 || t_code == C200 -> finish(c, SUCCEEDED, t_pay)
        :: else -> assert(t_code == C409);  /* with a lease a 409 carries Retry-After: refunded */
            phase[c] = READY_409; charged[c]--
        fi
    :: else -> skip  /* a late answer to an abandoned attempt */
    fi
}

inline go_idle(p) {
    step[p] = IDLE; jc[p] = 0; ja[p] = 0; jtok[p] = 0; jcode[p] = 0; jpay[p] = 0
}

/* respond: check the answer against the ghost ledger, put it on the wire if its attempt is current, free p */
inline respond(p, code, payload) {
    t_code = code; t_pay = payload; t_c = jc[p]; t_a = ja[p];
    if
    :: t_code == C201 || t_code == C200 ->
        count_effects(t_c);
        assert(t_n > 0);                                   /* no-lost-effect */
        assert(t_pay == 0 || PAID_CLIENT(t_pay) == t_c);  /* no-cross-client-response */
        if
        :: fs[t_c] -> assert(fs_pay[t_c] == t_pay)         /* consistent-replay */
        :: else -> fs[t_c] = 1; fs_pay[t_c] = t_pay
        fi
    :: else -> skip
    fi;
    if
    :: phase[t_c] == WAITING && attempts[t_c] == t_a ->
        assert(resp[t_c] == NO_MSG);
        resp[t_c] = t_code; resp_att[t_c] = t_a; resp_pay[t_c] = t_pay
    :: else -> skip
    fi;
    go_idle(p)
}

/* unique-index claim and the decision (protocol::decide; the body is always the same, so never a 422) */
inline claim(p) {
    t_c = jc[p];
    if
    :: rec[t_c] == FREE || (rec[t_c] == IN_PROGRESS && rec_exp[t_c]) ->
        if :: rec[t_c] == IN_PROGRESS -> HOOK_TAKEOVER :: else -> skip fi;
        assert(ver[t_c] < 254);
        ver[t_c]++;
        rec[t_c] = IN_PROGRESS; rec_tok[t_c] = ver[t_c]; rec_exp[t_c] = 0; rec_pay[t_c] = 0;
        jtok[p] = ver[t_c] + 1;
        step[p] = EFFECT
    :: rec[t_c] == IN_PROGRESS && !rec_exp[t_c] -> respond(p, C409, 0)
    :: rec[t_c] == COMPLETED -> respond(p, C200, rec_pay[t_c])
    fi
}

/* commit the payment with the completion, or be fenced off: roll back and start the handler again */
inline commit(p) {
    t_c = jc[p];
    if
    :: !FENCING || (rec[t_c] == IN_PROGRESS && rec_tok[t_c] + 1 == jtok[p]) ->
        count_effects(t_c);
        assert(t_n == 0);                                  /* no-duplicate-effect */
        assert(npay[t_c] < EXECUTIONS_MAX);
        npay[t_c]++;
        rec[t_c] = COMPLETED; rec_tok[t_c] = 0; rec_exp[t_c] = 0; rec_pay[t_c] = PAYMENT(t_c, npay[t_c]);
        step[p] = RESPOND; jcode[p] = C201; jpay[p] = PAYMENT(t_c, npay[t_c])
    :: else ->
        HOOK_FENCED;
        step[p] = CLAIM; jtok[p] = 0
    fi
}

/* ---- the processes: every alternative is one action of retrylab's world ---- */

#define DELIVER(c, a) :: d_step { IS_IDLE(ME) && (req[c] & (1 << (a))) != 0 -> \
    req[c] = req[c] ^ (1 << (a)); step[ME] = CLAIM; jc[ME] = c; ja[ME] = a; jtok[ME] = 0 }
#define DELIVER_ANY(c) DELIVER(c, 1) DELIVER(c, 2) DELIVER(c, 3) DELIVER(c, 4) DELIVER(c, 5) \
    DELIVER(c, 6) DELIVER(c, 7)

#define ME _pid
active [CLIENTS] proctype Client() {
end:
    do
    :: d_step { CAN_SEND(ME) -> send(ME) }
    :: d_step { CAN_TIME_OUT(ME) ->
        if :: ATTEMPT_ALIVE(ME) -> early_to-- :: else -> skip fi;
        if :: charged[ME] < MAX_ATTEMPTS -> send(ME) :: else -> finish(ME, GAVE_UP, 0) fi }
    :: d_step { resp[ME] != NO_MSG -> receive(ME) }
    :: d_step { resp[ME] != NO_MSG && drop_resp > 0 -> drop_resp--; purge(ME) }
    /* the lease on this client's key runs out: a pause (a fault) when its owner is alive, otherwise time */
    :: d_step { CAN_EXPIRE(ME) ->
        if :: OWNER_ALIVE(ME, rec_tok[ME]) -> pauses--; HOOK_SLOW_OWNER :: else -> skip fi;
        rec_exp[ME] = 1 }
    od
}
#undef ME

#define ME (_pid - CLIENTS)
active [PROCS] proctype Server() {
end:
    do
    DELIVER_ANY(0)
#if CLIENTS == 2
    DELIVER_ANY(1)
#endif
    :: d_step { step[ME] == CLAIM -> claim(ME) }
    :: d_step { step[ME] == EFFECT -> step[ME] = COMMIT }
    :: d_step { step[ME] == COMMIT -> commit(ME) }
    :: d_step { step[ME] == RESPOND -> respond(ME, jcode[ME], jpay[ME]) }
    /* a crash at a step boundary loses the open transaction; the process restarts idle */
    :: d_step { step[ME] != IDLE && crashes > 0 -> crashes--; go_idle(ME) }
    od
}
#undef ME

/* Liveness once faults stop: where nothing but faults can happen, no key is stuck and every operation resolved. */
active proctype Quiescence() {
end:
    do
    :: d_step { !MOVES_BUT_FAULTS -> assert(NO_STUCK_KEY); assert(RESOLVED) }
    od
}
