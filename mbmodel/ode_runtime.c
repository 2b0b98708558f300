/* mbmodel ODE runtime: explicit integration of a compiled model's dynamics in C.
 *
 * The dynamics are casadi-generated C (t, x, z, p, u -> ode, alg, quad, zero), called
 * through the function pointer the caller found in the model's library. Two methods:
 *
 * - mb_dop853: the Dormand-Prince 8(5,3) pair (Hairer, Norsett, Wanner: Solving Ordinary
 *   Differential Equations I, 2nd ed., section II.10) with its 7th-order dense output.
 *   The coefficients below are Hairer's published DOP853 tables (to double precision, as
 *   scipy.integrate's DOP853 has them; a test compares them through mb_dop853_tableau).
 *   Step-size control: the error norm of the 5th- and 3rd-order estimates combined as in
 *   DOP853, safety 0.9, steps change by 0.2x to 10x, and do not grow right after a
 *   rejection.
 * - mb_adams: Adams-Bashforth-Moulton, PECE, variable step and order (below).
 *
 * Compiled once per machine (the file's text is the cache key) and shared by every
 * model. */

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef long long int mb_int; /* casadi_int of the generated code */
typedef int (*mb_eval)(const double **arg, double **res, mb_int *iw, double *w, int mem);

enum {
    MB_OK = 0,
    MB_TOO_MANY_STEPS = 1,
    MB_STEP_TOO_SMALL = 2, /* also: the solution stopped being finite */
    MB_EVAL_FAILED = 3,
    MB_NO_MEMORY = 4,
    MB_CROSSED = 5 /* a guarded run stopped at a located crossing */
};

enum { STAGES = 12, EXTENDED = 16, POWER = 7 };

/* stage coefficients: stages 1-11, then the dense output's stages 13-15 (16 x 16) */
static const double DOP_A[256] = {
    /* row 0 */
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    /* row 1 */
    0.05260015195876773, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0,
    /* row 2 */
    0.0197250569845379, 0.0591751709536137, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
    /* row 3 */
    0.02958758547680685, 0.0, 0.08876275643042054, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
    /* row 4 */
    0.2413651341592667, 0.0, -0.8845494793282861, 0.924834003261792, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    /* row 5 */
    0.037037037037037035, 0.0, 0.0, 0.17082860872947386, 0.12546768756682242, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    /* row 6 */
    0.037109375, 0.0, 0.0, 0.17025221101954405, 0.06021653898045596, -0.017578125, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    /* row 7 */
    0.03709200011850479, 0.0, 0.0, 0.17038392571223998, 0.10726203044637328,
    -0.015319437748624402, 0.008273789163814023, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    /* row 8 */
    0.6241109587160757, 0.0, 0.0, -3.3608926294469414, -0.868219346841726, 27.59209969944671,
    20.154067550477894, -43.48988418106996, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    /* row 9 */
    0.47766253643826434, 0.0, 0.0, -2.4881146199716677, -0.590290826836843, 21.230051448181193,
    15.279233632882423, -33.28821096898486, -0.020331201708508627, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0,
    /* row 10 */
    -0.9371424300859873, 0.0, 0.0, 5.186372428844064, 1.0914373489967295, -8.149787010746927,
    -18.52006565999696, 22.739487099350505, 2.4936055526796523, -3.0467644718982196, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
    /* row 11 */
    2.273310147516538, 0.0, 0.0, -10.53449546673725, -2.0008720582248625, -17.9589318631188,
    27.94888452941996, -2.8589982771350235, -8.87285693353063, 12.360567175794303,
    0.6433927460157636, 0.0, 0.0, 0.0, 0.0, 0.0,
    /* row 12 */
    0.054293734116568765, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003,
    -5.801203960010585, 0.3111643669578199, -0.1521609496625161, 0.20136540080403034,
    0.04471061572777259, 0.0, 0.0, 0.0, 0.0,
    /* row 13 */
    0.056167502283047954, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25350021021662483, -0.2462390374708025,
    -0.12419142326381637, 0.15329179827876568, 0.00820105229563469, 0.007567897660545699,
    -0.008298, 0.0, 0.0, 0.0,
    /* row 14 */
    0.03183464816350214, 0.0, 0.0, 0.0, 0.0, 0.028300909672366776, 0.053541988307438566,
    -0.05492374857139099, 0.0, 0.0, -0.00010834732869724932, 0.0003825710908356584,
    -0.00034046500868740456, 0.1413124436746325, 0.0, 0.0,
    /* row 15 */
    -0.42889630158379194, 0.0, 0.0, 0.0, 0.0, -4.697621415361164, 7.683421196062599,
    4.06898981839711, 0.3567271874552811, 0.0, 0.0, 0.0, -0.0013990241651590145,
    2.9475147891527724, -9.15095847217987, 0.0
};

/* weights of the 8th-order solution */
static const double DOP_B[12] = {
    0.054293734116568765, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003,
    -5.801203960010585, 0.3111643669578199, -0.1521609496625161, 0.20136540080403034,
    0.04471061572777259
};

/* nodes */
static const double DOP_C[16] = {
    0.0, 0.05260015195876773, 0.0789002279381516, 0.1183503419072274, 0.2816496580927726,
    0.3333333333333333, 0.25, 0.3076923076923077, 0.6512820512820513, 0.6, 0.8571428571428571,
    1.0, 1.0, 0.1, 0.2, 0.7777777777777778
};

/* 3rd-order error estimate (with the new point's f last) */
static const double DOP_E3[13] = {
    -0.18980075407240762, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003,
    -5.801203960010585, -0.4226823213237919, -0.1521609496625161, 0.20136540080403034,
    0.02265179219836082, 0.0
};

/* 5th-order error estimate */
static const double DOP_E5[13] = {
    0.01312004499419488, 0.0, 0.0, 0.0, 0.0, -1.2251564463762044, -0.4957589496572502,
    1.6643771824549864, -0.35032884874997366, 0.3341791187130175, 0.08192320648511571,
    -0.022355307863886294, 0.0
};

/* dense output (4 x 16) */
static const double DOP_D[64] = {
    /* row 0 */
    -8.428938276109013, 0.0, 0.0, 0.0, 0.0, 0.5667149535193777, -3.0689499459498917,
    2.38466765651207, 2.117034582445028, -0.871391583777973, 2.2404374302607883,
    0.6315787787694688, -0.08899033645133331, 18.148505520854727, -9.194632392478356,
    -4.436036387594894,
    /* row 1 */
    10.427508642579134, 0.0, 0.0, 0.0, 0.0, 242.28349177525817, 165.20045171727028,
    -374.5467547226902, -22.113666853125306, 7.733432668472264, -30.674084731089398,
    -9.332130526430229, 15.697238121770845, -31.139403219565178, -9.35292435884448,
    35.81684148639408,
    /* row 2 */
    19.985053242002433, 0.0, 0.0, 0.0, 0.0, -387.0373087493518, -189.17813819516758,
    527.8081592054236, -11.57390253995963, 6.8812326946963, -1.0006050966910838,
    0.7777137798053443, -2.778205752353508, -60.19669523126412, 84.32040550667716,
    11.99229113618279,
    /* row 3 */
    -25.69393346270375, 0.0, 0.0, 0.0, 0.0, -154.18974869023643, -231.5293791760455,
    357.6391179106141, 93.40532418362432, -37.45832313645163, 104.0996495089623,
    29.8402934266605, -43.53345659001114, 96.32455395918828, -39.17726167561544,
    -149.72683625798564
};

/* The tables in one array: A, B, C, E3, E5, D (374 doubles), for the test. */
void mb_dop853_tableau(double *out) {
    const double *parts[6] = {DOP_A, DOP_B, DOP_C, DOP_E3, DOP_E5, DOP_D};
    const int sizes[6] = {256, 12, 16, 13, 13, 64};
    for (int k = 0; k < 6; k++) {
        memcpy(out, parts[k], sizeof(double) * (size_t)sizes[k]);
        out += sizes[k];
    }
}

typedef struct {
    mb_eval eval;
    const double **arg;
    double **res;
    mb_int *iw;
    double *w;
    int mem;
    const double *pu;
    double t;
    long evaluations;
    double t_below; /* the last double before the run's end */
} Rhs;

/* f(t, x). A run asked to (info[6] = 1) integrates the model of [t0, t_end): at t_end
 * itself it is evaluated a rounding before, so that a relation on time switching there (a
 * time event, a table's jump) still shows its value before the event. */
static int rhs(Rhs *r, double t, const double *x, double *xdot) {
    r->t = t < r->t_below ? t : r->t_below;
    r->arg[0] = &r->t;
    r->arg[1] = x;
    r->arg[2] = 0;
    r->arg[3] = r->pu;
    r->arg[4] = 0;
    r->res[0] = xdot;
    r->res[1] = r->res[2] = r->res[3] = 0;
    r->evaluations++;
    return r->eval(r->arg, r->res, r->iw, r->w, r->mem) ? MB_EVAL_FAILED : MB_OK;
}

/* The evaluation of f for one run: pointer arrays of the sizes the generated function
 * asks for (NULL on failure: the caller reports MB_NO_MEMORY). */
static Rhs rhs_open(mb_eval eval, mb_int *iw, double *w, int sz_arg, int sz_res, int mem,
                    const double *pu, double t_end, double left_limit) {
    Rhs r = {eval, 0, 0, iw, w, mem, pu, 0.0, 0, 0.0};
    r.t_below = left_limit != 0.0 ? nextafter(t_end, -INFINITY) : INFINITY;
    r.arg = (const double **)calloc((size_t)(sz_arg > 5 ? sz_arg : 5), sizeof(double *));
    r.res = (double **)calloc((size_t)(sz_res > 4 ? sz_res : 4), sizeof(double *));
    return r;
}

static int all_finite(const double *v, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

/* The run's results in info (layout in mb_dop853's comment). */
static void report(double *info, double h, double t, long accepted, long rejected,
                   long evaluations, int written) {
    info[0] = h;
    info[1] = t;
    info[2] = (double)accepted;
    info[3] = (double)rejected;
    info[4] = (double)evaluations;
    info[5] = (double)written;
}

/* y + h * sum_{j<s} a[j] K[j] */
static void stage_point(double *out, const double *y, double h, const double *a,
                        const double *K, int s, int n) {
    for (int i = 0; i < n; i++) {
        double sum = 0.0;
        for (int j = 0; j < s; j++)
            if (a[j] != 0.0) sum += a[j] * K[j * n + i];
        out[i] = y[i] + h * sum;
    }
}

/* ---- Guards: crossing detection and location inside the run -------------------------
 * A run of mb_dop853 may carry a guard: the model's event function (casadi-generated,
 * x, z, u, p, t -> values, the first n_c of them zero-crossing functions of the model's
 * relations) and the relations' values in force. After every accepted step the guard is
 * evaluated at the output times inside the step and at its end; the first point where a
 * relation would read differently (beyond the noise floor) closes a bracket, which is
 * narrowed by regula falsi (Illinois) on the step's dense output, without integrating
 * again, to the relative width asked for. The run stops there (MB_CROSSED): the state and
 * the event function's values at the bracket's right end, where the relation has switched,
 * are returned; output times up to its left end are written. The caller runs the event. */
typedef struct {
    mb_eval eval;
    mb_int *iw;
    double *w;
    long long sz_arg, sz_res, mem;
    long long n_p;        /* pu = [p (n_p), u]: the event function reads u and p apart */
    long long n_c;        /* crossing functions: the first n_c values */
    long long n_values;   /* all values */
    double *frozen;       /* the relations' values in force (0 or 1); out: at the end */
    const double *strict; /* 1: the relation is c > 0; 0: c >= 0 */
    double noise;         /* |c| <= noise: the relation keeps its value */
    long long scales_at;  /* the relations' scales among the values (-1: none) ... */
    double round_off;     /* ... and |c| < round_off * scale: it keeps its value too */
    double width;         /* relative width a crossing is located to */
    double *x_cross;      /* out: the state at the crossing (n) */
    double *values;       /* out: the event function's values there (n_values) */
    double *t_left;       /* out: the bracket's left end */
    /* Inert crossings (see guard_inert): */
    const double *direct;           /* 1: the continuous part reads the relation */
    const long long *relation_slot; /* where each relation's value is in u */
    long long n_conditions, conditions_at; /* when conditions among the values */
    long long n_equations, equations_at;   /* discrete equations among the values ... */
    const long long *equation_slot;        /* ... and where their variables are in u */
    double *inert;                  /* out: crossings passed as inert */
    double *triggered;  /* out: per relation, 1 if it read differently beyond its noise and
                         * round-off where the crossing was found (before locating it) */
} MbGuard;

typedef struct {
    const MbGuard *g;
    const double **arg;
    double **res;
    double *pu; /* a copy: inert crossings flip relations in it */
    double t;
    double *c_left, *c_here, *c_mid; /* values at the bracket's ends and a trial point */
    double *c_after;                  /* values with relations flipped (guard_inert) */
    double *c_memory;                 /* the four, and pu's copy */
} Guarded;

static int guard_eval(Guarded *q, double t, const double *x, double *values) {
    q->t = t;
    q->arg[0] = x;
    q->arg[1] = 0;
    q->arg[2] = q->pu + q->g->n_p;
    q->arg[3] = q->pu;
    q->arg[4] = &q->t;
    q->res[0] = values;
    return q->g->eval(q->arg, q->res, q->g->iw, q->g->w, (int)q->g->mem) ? MB_EVAL_FAILED
                                                                        : MB_OK;
}

static int literal(const MbGuard *g, long long k, double c) {
    return g->strict[k] != 0.0 ? c > 0.0 : c >= 0.0;
}

enum { BEYOND_NOISE = 1, BEYOND_ROUND_OFF = 2 };

/* Whether relation k reads differently from its value in force (see MbGuard): beyond its
 * noise and its round-off (checks), or at all (locating: a crossing is located where its
 * function crosses zero). c: all values. */
static int reads_differently(const MbGuard *g, const double *c, long long k, int beyond) {
    if ((beyond & BEYOND_NOISE) && fabs(c[k]) <= g->noise) return 0;
    if ((beyond & BEYOND_ROUND_OFF) && g->scales_at >= 0
        && fabs(c[k]) < g->round_off * c[g->scales_at + k])
        return 0;
    return literal(g, k, c[k]) != (g->frozen[k] != 0.0);
}

/* Whether some relation reads differently (reads_differently). */
static int guard_differs(const MbGuard *g, const double *c, int beyond) {
    for (long long k = 0; k < g->n_c; k++)
        if (reads_differently(g, c, k, beyond)) return 1;
    return 0;
}

/* Which relations read differently beyond noise and round-off at values c. */
static void guard_triggered(const MbGuard *g, const double *c) {
    for (long long k = 0; k < g->n_c; k++)
        g->triggered[k] = reads_differently(g, c, k, BEYOND_NOISE | BEYOND_ROUND_OFF);
}

/* The guard of one run; pu (n_pu values) is copied. */
static Guarded guard_open(const MbGuard *g, const double *pu, int n_pu) {
    Guarded q = {g, 0, 0, 0, 0.0, 0, 0, 0, 0, 0};
    if (!g) return q;
    size_t n_values = (size_t)(g->n_values > 0 ? g->n_values : 1);
    q.arg = (const double **)calloc((size_t)(g->sz_arg > 5 ? g->sz_arg : 5), sizeof(double *));
    q.res = (double **)calloc((size_t)(g->sz_res > 1 ? g->sz_res : 1), sizeof(double *));
    q.c_memory = (double *)malloc(sizeof(double) * (4 * n_values + (size_t)n_pu + 1));
    if (q.c_memory) {
        q.c_left = q.c_memory;
        q.c_here = q.c_left + n_values;
        q.c_mid = q.c_here + n_values;
        q.c_after = q.c_mid + n_values;
        q.pu = q.c_after + n_values;
        memcpy(q.pu, pu, sizeof(double) * (size_t)n_pu);
    }
    return q;
}

static void guard_close(Guarded *q) {
    free(q->arg), free(q->res), free(q->c_memory);
}

/* Whether the crossing at (t, x), where q->c_here holds the values, is inert: the
 * relations that read differently there are not read by the continuous part, and with
 * them flipped every when condition and discrete equation keeps its value (and the
 * discrete equations still give the discrete variables their values). Then the trajectory
 * is the same either way: the relations take their new values (in frozen and pu) and the
 * run goes on, with q->c_here the values after the flip. The same rule as the Python
 * fallback's (mbmodel.events._Run.inert). */
static int guard_inert(Guarded *q, double t, const double *x, int *inert) {
    const MbGuard *g = q->g;
    double *u = q->pu + g->n_p, *after = q->c_after;
    int changed = 0;
    *inert = 0;
    for (long long k = 0; k < g->n_c; k++) {
        if (literal(g, k, q->c_here[k]) == (g->frozen[k] != 0.0)) continue;
        if (g->direct[k] != 0.0) return MB_OK;
        changed = 1;
    }
    if (!changed) return MB_OK;
    for (long long k = 0; k < g->n_c; k++)
        if (literal(g, k, q->c_here[k]) != (g->frozen[k] != 0.0))
            u[g->relation_slot[k]] = 1.0 - g->frozen[k];
    int status = guard_eval(q, t, x, after);
    int same = !status;
    for (long long i = 0; same && i < g->n_conditions; i++)
        same = q->c_here[g->conditions_at + i] == after[g->conditions_at + i];
    for (long long i = 0; same && i < g->n_equations; i++)
        same = q->c_here[g->equations_at + i] == after[g->equations_at + i]
               && after[g->equations_at + i] == u[g->equation_slot[i]];
    for (long long k = 0; k < g->n_c; k++) {
        if (literal(g, k, q->c_here[k]) == (g->frozen[k] != 0.0)) continue;
        if (same)
            g->frozen[k] = 1.0 - g->frozen[k];
        else
            u[g->relation_slot[k]] = g->frozen[k]; /* not inert: as it was */
    }
    if (same) {
        memcpy(q->c_here, after, sizeof(double) * (size_t)g->n_values);
        *inert = 1;
    }
    return status;
}

/* Inert crossings passed within one step at most. */
enum { MAX_INERT = 32 };

static void swap(double **a, double **b) {
    double *tmp = *a;
    *a = *b;
    *b = tmp;
}

/* Hairer's starting step: the step whose first- and second-order terms stay within the
 * tolerance, for an error of the given order (8 for DOP853, 2 for Adams' first step). It
 * also sees a derivative that is 0 at the start and grows (a rest-to-rest motion). */
static int first_step(Rhs *r, double t, const double *y, const double *f, int n,
                      double rtol, double atol, int order, double *scratch, double *f1,
                      double *h) {
    double d0 = 0.0, d1 = 0.0, d2 = 0.0;
    for (int i = 0; i < n; i++) {
        double sc = atol + fabs(y[i]) * rtol;
        d0 += (y[i] / sc) * (y[i] / sc);
        d1 += (f[i] / sc) * (f[i] / sc);
    }
    d0 = sqrt(d0 / n);
    d1 = sqrt(d1 / n);
    double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    for (int i = 0; i < n; i++) scratch[i] = y[i] + h0 * f[i];
    int status = rhs(r, t + h0, scratch, f1);
    if (status) return status;
    for (int i = 0; i < n; i++) {
        double sc = atol + fabs(y[i]) * rtol;
        d2 += ((f1[i] - f[i]) / sc) * ((f1[i] - f[i]) / sc);
    }
    d2 = sqrt(d2 / n) / h0;
    double h1 = (d1 <= 1e-15 && d2 <= 1e-15) ? fmax(1e-6, h0 * 1e-3)
                                             : pow(0.01 / fmax(d1, d2), 1.0 / order);
    *h = fmin(100.0 * h0, h1);
    if (!isfinite(*h) || *h <= 0.0) *h = 1e-6;
    return MB_OK;
}

/* The coefficients of the step's 7th-order dense output (stages 13-15 evaluated here). */
static int dense_prepare(Rhs *r, double t, double h, const double *y, const double *y_new,
                         double *K, double *point, double *dense, int n) {
    const double *A = DOP_A, *C = DOP_C, *D = DOP_D;
    for (int s = STAGES + 1; s < EXTENDED; s++) {
        stage_point(point, y, h, A + s * EXTENDED, K, s, n);
        int status = rhs(r, t + C[s] * h, point, K + s * n);
        if (status) return status;
    }
    for (int i = 0; i < n; i++) {
        double dy = y_new[i] - y[i];
        dense[i] = dy;
        dense[n + i] = h * K[i] - dy;
        dense[2 * n + i] = 2.0 * dy - h * (K[STAGES * n + i] + K[i]);
        for (int d = 0; d < POWER - 3; d++) {
            double sum = 0.0;
            for (int j = 0; j < EXTENDED; j++) sum += D[d * EXTENDED + j] * K[j * n + i];
            dense[(3 + d) * n + i] = h * sum;
        }
    }
    return MB_OK;
}

/* The dense output at the fraction s of the step. */
static void dense_at(const double *dense, const double *y, double s, double *out, int n) {
    for (int i = 0; i < n; i++) {
        double v = 0.0;
        for (int d = POWER - 1; d >= 0; d--) {
            v += dense[d * n + i];
            v *= ((POWER - 1 - d) % 2 == 0) ? s : 1.0 - s;
        }
        out[i] = y[i] + v;
    }
}

/* Regula falsi (Illinois) on the step's dense output between t_l (relations as in force,
 * values q->c_left) and t_r (some differ, q->c_here), to the guard's width; the ends are
 * updated in place and x_r is the state at t_r. The same iteration as the Python
 * fallback's (mbmodel.events._Run.locate), with the dense output for re-integration. */
static int guard_locate(Guarded *q, double t, double h, const double *y, const double *dense,
                        int n, double *t_l, double *t_r, double *x_r, double *x_m) {
    const MbGuard *g = q->g;
    double scale_l = 1.0, scale_r = 1.0;
    int last_side = 0;
    for (int it = 0; it < 100; it++) {
        double magnitude = fmax(1.0, fabs(*t_r));
        if (*t_r - *t_l <= g->width * magnitude) break;
        double frac = 1.0;
        for (long long k = 0; k < g->n_c; k++) {
            if (literal(g, k, q->c_here[k]) == (g->frozen[k] != 0.0)) continue;
            double f_l = q->c_left[k] * scale_l, f_r = q->c_here[k] * scale_r;
            double fk = f_l != f_r ? f_l / (f_l - f_r) : 0.5;
            if (isnan(fk)) fk = 0.5;
            fk = fk < 0.0 ? 0.0 : (fk > 1.0 ? 1.0 : fk);
            if (fk < frac) frac = fk;
        }
        double tol = 0.25 * g->width * magnitude;
        double t_m = *t_l + frac * (*t_r - *t_l);
        t_m = fmin(fmax(t_m, *t_l + tol), *t_r - tol);
        dense_at(dense, y, (t_m - t) / h, x_m, n);
        int status = guard_eval(q, t_m, x_m, q->c_mid);
        if (status) return status;
        if (guard_differs(g, q->c_mid, 0)) {
            *t_r = t_m;
            memcpy(x_r, x_m, sizeof(double) * (size_t)n);
            swap(&q->c_here, &q->c_mid);
            scale_l = last_side == 1 ? 0.5 : 1.0;
            scale_r = 1.0;
            last_side = 1;
        } else {
            *t_l = t_m;
            swap(&q->c_left, &q->c_mid);
            scale_r = last_side == -1 ? 0.5 : 1.0;
            scale_l = 1.0;
            last_side = -1;
        }
    }
    /* Relations that cross within the width after t_r cross with it: one event, as at one
     * threshold written twice (dp > p_crack and dp - p_crack < 0 differ by a rounding). */
    double t_a = *t_r + g->width * fmax(1.0, fabs(*t_r));
    if (t_a > t + h) return MB_OK;
    dense_at(dense, y, (t_a - t) / h, x_m, n);
    int status = guard_eval(q, t_a, x_m, q->c_mid);
    if (status) return status;
    int more = 0;
    for (long long k = 0; k < g->n_c; k++) {
        int before = literal(g, k, q->c_here[k]) != (g->frozen[k] != 0.0);
        int after = literal(g, k, q->c_mid[k]) != (g->frozen[k] != 0.0);
        if (before && !after) return MB_OK;   /* (one switches back: t_r stands) */
        more |= after && !before;
    }
    if (more) {
        *t_r = t_a;
        memcpy(x_r, x_m, sizeof(double) * (size_t)n);
        swap(&q->c_here, &q->c_mid);
    }
    return MB_OK;
}

/* One accepted step, and its dense output once something needs it. */
typedef struct {
    Rhs *r;
    double t, h;
    const double *y, *y_new;
    double *K, *point, *dense;
    int n, ready;
} Step;

static int step_dense(Step *s) {
    if (s->ready) return MB_OK;
    int status = dense_prepare(s->r, s->t, s->h, s->y, s->y_new, s->K, s->point, s->dense,
                               s->n);
    s->ready = status == MB_OK;
    return status;
}

/* Points inside every step where the guard looks on a cubic interpolant of the step's
 * ends and slopes (no evaluation of f): DOP853's steps are long, and a relation that holds
 * for less than a step (x > 0.99 near the peaks of a fast oscillation) would switch and
 * switch back unseen between the step's ends. What they show is checked on the dense
 * output before it counts. */
enum { PROBES = 3 };

/* The cubic Hermite interpolant of the step at fraction theta (4th order). */
static void hermite_at(const Step *s, double theta, double *out) {
    double t2 = theta * theta, t3 = t2 * theta;
    double a = 2.0 * t3 - 3.0 * t2 + 1.0, b = (t3 - 2.0 * t2 + theta) * s->h;
    double c = 3.0 * t2 - 2.0 * t3, d = (t3 - t2) * s->h;
    const double *f0 = s->K, *f1 = s->K + (size_t)STAGES * s->n;
    for (int i = 0; i < s->n; i++)
        out[i] = a * s->y[i] + b * f0[i] + c * s->y_new[i] + d * f1[i];
}

/* The guard over an accepted step ending at t_new: its values at the output times inside
 * the step (from t_out[written] on), at PROBES points inside it and at its end, until a
 * relation reads differently. That crossing is located; an inert one is passed (at most
 * MAX_INERT in a step, then the caller sees them as events, and its chattering check with
 * them) and the scan goes on from it. At an event *crossed = 1 with the bracket
 * [*t_l, *t_r], and the guard's outputs (x_cross, values, t_left) are set. */
static int guard_step(Guarded *q, Step *s, const double *t_out, int n_out, int written,
                      double t_new, int *crossed, double *t_l, double *t_r) {
    const MbGuard *g = q->g;
    int j = written, k = 1, passed = 0, status;
    *t_l = s->t;
    for (;;) {
        double t_next = j < n_out && t_out[j] < t_new ? t_out[j] : t_new;
        double t_probe = s->t + s->h * k / (PROBES + 1.0);
        while (k <= PROBES && t_probe <= *t_l) t_probe = s->t + s->h * ++k / (PROBES + 1.0);
        int probe = k <= PROBES && t_probe < t_next;
        double tp = probe ? t_probe : t_next;
        const double *xp = s->y_new;
        if (probe) {
            k++;
            hermite_at(s, (tp - s->t) / s->h, s->point);
            if ((status = guard_eval(q, tp, s->point, q->c_here))) return status;
            if (!guard_differs(g, q->c_here, BEYOND_NOISE | BEYOND_ROUND_OFF)) continue;
        }
        if (tp < t_new) {
            if ((status = step_dense(s))) return status;
            dense_at(s->dense, s->y, (tp - s->t) / s->h, s->point, s->n);
            xp = s->point;
        }
        if ((status = guard_eval(q, tp, xp, q->c_here))) return status;
        if (!guard_differs(g, q->c_here, BEYOND_NOISE | BEYOND_ROUND_OFF)) {
            *t_l = tp;
            swap(&q->c_left, &q->c_here);
            if (tp == t_new) return MB_OK;
            if (!probe) j++;
            continue;
        }
        *t_r = tp;
        memcpy(g->x_cross, xp, sizeof(double) * (size_t)s->n);
        guard_triggered(g, q->c_here);
        if ((status = step_dense(s))) return status;
        status = guard_locate(q, s->t, s->h, s->y, s->dense, s->n, t_l, t_r, g->x_cross,
                              s->point);
        int inert = 0;
        if (!status && passed < MAX_INERT) status = guard_inert(q, *t_r, g->x_cross, &inert);
        if (status) return status;
        if (!inert) {
            *crossed = 1;
            memcpy(g->values, q->c_here, sizeof(double) * (size_t)g->n_values);
            *g->t_left = *t_l;
            return MB_OK;
        }
        /* the relations took their new values at t_r: look on from there (point j again) */
        passed++;
        *g->inert += 1.0;
        *t_l = *t_r;
        *t_r = t_new;
        swap(&q->c_left, &q->c_here);
    }
}

/* Integrate dx/dt = f(t, x) from t0 through the increasing output times t_out[0..n_out-1]
 * (all > t0), writing x at each into the columns of x_out (n x n_out, column-major).
 *
 * eval, iw, w, sz_arg, sz_res, mem: the generated function, its integer and real work
 * arrays and the sizes of its argument and result pointer arrays, and its memory slot.
 * pu: its parameter input (parameters, then inputs). h_max <= 0: no step limit.
 * max_steps: the steps (accepted and rejected) allowed between two output times, as
 * CVODES' mxstep (a run with more output times may take more steps in all).
 * info (in): info[0] > 0 is the first step to try; info[6] = 1: evaluate f at t_end a
 * rounding before (see rhs). info (out): [0] the next step the
 * control proposes (for a run that goes on from the last output time), [1] the time
 * reached, [2] accepted steps, [3] rejected steps, [4] evaluations of f, [5] output times
 * written. guard: NULL, or crossings to stop at (see MbGuard).
 * Returns MB_OK, MB_CROSSED (info[1]: the crossing's time), or a failure code with the
 * outputs up to info[5] written. */
int mb_dop853(mb_eval eval, mb_int *iw, double *w, int sz_arg, int sz_res, int mem, int n,
              double t0, const double *x0, const double *pu, int n_out, const double *t_out,
              double *x_out, double rtol, double atol, double h_max, long max_steps,
              double *info, const MbGuard *guard, int sz_pu) {
    const double *A = DOP_A, *B = DOP_B, *C = DOP_C, *E3 = DOP_E3, *E5 = DOP_E5;
    Rhs r = rhs_open(eval, iw, w, sz_arg, sz_res, mem, pu, t_out[n_out - 1], info[6]);
    Guarded q = guard_open(guard, pu, sz_pu);
    /* stages K (16 rows of n), y, y_new, a stage's point, the dense output (7 rows) */
    double *K = (double *)malloc(sizeof(double) * (size_t)n * (EXTENDED + 3 + POWER));
    if (!r.arg || !r.res || !K || (guard && (!q.arg || !q.res || !q.c_memory))) {
        free(r.arg), free(r.res), free(K), guard_close(&q);
        return MB_NO_MEMORY;
    }
    if (guard) r.pu = q.pu; /* the continuous part does not read what inert flips change */
    double *y = K + EXTENDED * n, *y_new = y + n, *point = y_new + n, *dense = point + n;
    long accepted = 0, rejected = 0, at_output = 0; /* steps when an output was last written */
    int written = 0, status = MB_OK, just_rejected = 0;
    double t = t0, t_end = t_out[n_out - 1], h = info[0];
    memcpy(y, x0, sizeof(double) * (size_t)n);
    status = rhs(&r, t, y, K);
    if (!status && !all_finite(K, n)) status = MB_STEP_TOO_SMALL;
    if (!status && guard) status = guard_eval(&q, t, y, q.c_left);
    if (!status && !(h > 0.0))
        status = first_step(&r, t, y, K, n, rtol, atol, 8, point, K + n, &h);
    while (!status && written < n_out) {
        if (accepted + rejected - at_output >= max_steps) {
            status = MB_TOO_MANY_STEPS;
            break;
        }
        double h_min = 10.0 * fabs(nextafter(t, INFINITY) - t);
        if (h_max > 0.0 && h > h_max) h = h_max;
        /* the last step ends exactly at t_end (stretched by at most 0.01 %, within h_max) */
        double rest = t_end - t, wanted = h;
        int last = h >= rest || (1.0001 * h >= rest && !(h_max > 0.0 && rest > h_max));
        if (last) h = rest;
        if (h < h_min) {
            status = MB_STEP_TOO_SMALL;
            break;
        }
        /* stages 1..11, the new point, and f there (FSAL: row 12) */
        for (int s = 1; s < STAGES && !status; s++) {
            stage_point(point, y, h, A + s * EXTENDED, K, s, n);
            status = rhs(&r, t + C[s] * h, point, K + s * n);
        }
        if (status) break;
        stage_point(y_new, y, h, B, K, STAGES, n);
        double t_new = last ? t_end : t + h;
        double err5 = 0.0, err3 = 0.0;
        int finite = all_finite(y_new, n);
        if (finite) {
            status = rhs(&r, t_new, y_new, K + STAGES * n);
            if (status) break;
            finite = all_finite(K + STAGES * n, n);
        }
        if (finite) {
            for (int i = 0; i < n; i++) {
                double sc = atol + fmax(fabs(y[i]), fabs(y_new[i])) * rtol;
                double e5 = 0.0, e3 = 0.0;
                for (int j = 0; j <= STAGES; j++) {
                    e5 += E5[j] * K[j * n + i];
                    e3 += E3[j] * K[j * n + i];
                }
                err5 += (e5 / sc) * (e5 / sc);
                err3 += (e3 / sc) * (e3 / sc);
            }
        }
        double error = !finite ? INFINITY
                       : (err5 == 0.0 && err3 == 0.0)
                           ? 0.0
                           : h * err5 / sqrt((err5 + 0.01 * err3) * n);
        if (!(error < 1.0)) {
            double factor = isfinite(error) ? fmax(0.2, 0.9 * pow(error, -1.0 / 8.0)) : 0.2;
            h *= factor;
            rejected++;
            just_rejected = 1;
            continue;
        }
        /* accepted: with a guard, the crossings in the step */
        int written_before = written;
        Step step = {&r, t, h, y, y_new, K, point, dense, n, 0};
        int crossed = 0;
        double t_l = t_new, t_r = t_new;
        if (guard && (status = guard_step(&q, &step, t_out, n_out, written, t_new, &crossed,
                                          &t_l, &t_r)))
            break;
        /* outputs inside (t, t_new] (up to the bracket's left end at a crossing) */
        double t_stop = crossed ? t_l : t_new;
        if (written < n_out && t_out[written] < t_new && t_out[written] <= t_stop) {
            if ((status = step_dense(&step))) break;
            while (written < n_out && t_out[written] < t_new && t_out[written] <= t_stop) {
                dense_at(dense, y, (t_out[written] - t) / h, x_out + (size_t)written * n, n);
                written++;
            }
        }
        if (!crossed)
            while (written < n_out && t_out[written] <= t_new) { /* the step's end: exact */
                memcpy(x_out + (size_t)written * n, y_new, sizeof(double) * (size_t)n);
                written++;
            }
        double factor = error == 0.0 ? 10.0 : fmin(10.0, 0.9 * pow(error, -1.0 / 8.0));
        if (just_rejected && factor > 1.0) factor = 1.0;
        just_rejected = 0;
        accepted++;
        if (written > written_before) at_output = accepted + rejected;
        h *= factor;
        if (crossed) {
            t = t_r;
            status = MB_CROSSED;
            break;
        }
        t = t_new;
        memcpy(y, y_new, sizeof(double) * (size_t)n);
        memcpy(K, K + STAGES * n, sizeof(double) * (size_t)n);
        /* a last step cut short says nothing about the step the next run may start with */
        if (last && h < wanted) h = wanted;
    }
    report(info, h, t, accepted, rejected, r.evaluations, written);
    free(r.arg), free(r.res), free(K), guard_close(&q);
    return status;
}

/* ---- Adams: variable step, variable order (1-12), PECE --------------------------------
 * The modified divided differences of Shampine and Gordon (Computer Solution of Ordinary
 * Differential Equations, 1975, the STEP and INTRP routines): an Adams-Bashforth predictor
 * and Adams-Moulton corrector of order k and k+1 on the last k steps whatever their
 * lengths, two evaluations per step, the order and step chosen from error estimates at
 * orders k-2..k+1, and the solution between steps from the same polynomial. Indices run
 * from 1 as in the book. Error norm: root mean square of the local error over
 * rtol*|y| + atol, at most 1. */

enum { MAX_ORDER = 12 };

#define PHI(i) (phi + (size_t)(i) * n)

/* y at xout from the polynomial of the last step (which ended at x with order kold) */
static void adams_interpolate(int n, double x, const double *y, double xout, double *yout,
                              int kold, const double *phi, const double *psi) {
    double g[MAX_ORDER + 2], w[MAX_ORDER + 2];
    double hi = xout - x, term = 0.0;
    int ki = kold + 1, kip1 = ki + 1;
    for (int i = 1; i <= ki; i++) w[i] = 1.0 / i;
    g[1] = 1.0;
    for (int j = 2; j <= ki; j++) {
        double psijm1 = psi[j - 1], gamma = (hi + term) / psijm1, eta = hi / psijm1;
        for (int i = 1; i <= kip1 - j; i++) w[i] = gamma * w[i] - eta * w[i + 1];
        g[j] = w[1];
        term = psijm1;
    }
    for (int l = 0; l < n; l++) {
        double sum = 0.0;
        for (int j = 1; j <= ki; j++) sum += g[kip1 - j] * PHI(kip1 - j)[l];
        yout[l] = y[l] + hi * sum;
    }
}

static double rms_scaled(const double *v, const double *wt, int n) {
    double sum = 0.0;
    for (int l = 0; l < n; l++) sum += (v[l] / wt[l]) * (v[l] / wt[l]);
    return sqrt(sum / n);
}

/* Same arguments and results as mb_dop853 (info[0] in is ignored: order 1 starts with
 * its own step), without a guard (runs with events use DOP853: a one-step method loses
 * nothing when a crossing stops it). */
int mb_adams(mb_eval eval, mb_int *iw, double *w_work, int sz_arg, int sz_res, int mem, int n,
             double t0, const double *x0, const double *pu, int n_out, const double *t_out,
             double *x_out, double rtol, double atol, double h_max, long max_steps,
             double *info, const MbGuard *guard, int sz_pu) {
    (void)sz_pu;
    if (guard) return MB_EVAL_FAILED;
    static const double gstar[MAX_ORDER + 2] = {
        0.0, 0.5, 0.0833, 0.0417, 0.0264, 0.0188, 0.0143, 0.0114, 0.00936, 0.00789,
        0.00679, 0.00592, 0.00524, 0.00468};
    double psi[MAX_ORDER + 2] = {0}, alpha[MAX_ORDER + 2] = {0}, beta[MAX_ORDER + 2] = {0};
    double sig[MAX_ORDER + 3] = {0}, v[MAX_ORDER + 2] = {0}, w[MAX_ORDER + 2] = {0};
    double g[MAX_ORDER + 3] = {0}, two[MAX_ORDER + 3];
    Rhs r = rhs_open(eval, iw, w_work, sz_arg, sz_res, mem, pu, t_out[n_out - 1], info[6]);
    /* phi: columns 1..MAX_ORDER+2; y, yp, p, wt, scratch */
    double *phi = (double *)calloc((size_t)n * (MAX_ORDER + 3 + 5), sizeof(double));
    if (!r.arg || !r.res || !phi) {
        free(r.arg), free(r.res), free(phi);
        return MB_NO_MEMORY;
    }
    double *y = phi + (size_t)(MAX_ORDER + 3) * n, *yp = y + n, *p = yp + n, *wt = p + n;
    double *scratch = wt + n;
    const double fouru = 4.0 * DBL_EPSILON, p5eps = 0.5;
    double t = t0, t_end = t_out[n_out - 1], h = 0.0, hold = 0.0, absh = 0.0, erk = 0.0;
    int k = 1, kold = 0, ns = 0, phase1 = 1, written = 0, status = MB_OK;
    long accepted = 0, rejected = 0, at_output = 0; /* steps when an output was last written */
    two[1] = 2.0;
    for (int i = 2; i <= MAX_ORDER + 1; i++) two[i] = 2.0 * two[i - 1];
    g[1] = 1.0;
    g[2] = 0.5;
    sig[1] = 1.0;

    memcpy(y, x0, sizeof(double) * (size_t)n);
    status = rhs(&r, t, y, yp);
    if (!status && !all_finite(yp, n)) status = MB_STEP_TOO_SMALL;
    if (!status) {
        for (int l = 0; l < n; l++) {
            PHI(1)[l] = yp[l];
            PHI(2)[l] = 0.0;
            wt[l] = rtol * fabs(y[l]) + atol;
        }
        double sum = rms_scaled(yp, wt, n);
        absh = t_end - t;
        if (h_max > 0.0 && absh > h_max) absh = h_max;
        if (1.0 < 16.0 * sum * absh * absh) absh = 0.25 * sqrt(1.0 / sum);
        /* Shampine and Gordon's start looks at the first derivative only: where it is 0
         * (a motion from rest) it took the whole run as the first step, and the order-1
         * error estimate, f at both ends, passed it (x(1) = 0 for x' = sin(pi t)^2). */
        double h_start;
        status = first_step(&r, t, y, yp, n, rtol, atol, 2, scratch, p, &h_start);
        if (!status) absh = fmin(absh, h_start);
        h = fmax(absh, fouru * fabs(t));   /* a multistep method starts afresh */
    }
    while (!status && written < n_out) {
        if (accepted + rejected - at_output >= max_steps) {
            status = MB_TOO_MANY_STEPS;
            break;
        }
        if (h_max > 0.0 && h > h_max) h = h_max;
        double rest = t_end - t;
        if (h >= rest || 1.0001 * h >= rest) h = rest;
        if (h < fouru * fabs(t) || h <= 0.0) {
            status = MB_STEP_TOO_SMALL;
            break;
        }
        for (int l = 0; l < n; l++) wt[l] = rtol * fabs(y[l]) + atol;
        int ifail = 0, knew;
        double erkm1 = 0.0, erkm2 = 0.0, x_old = t;
        for (;;) { /* until the step succeeds */
            /* block 1: coefficients of this step */
            int kp1 = k + 1, kp2 = k + 2, km1 = k - 1, km2 = k - 2;
            if (h != hold) ns = 0;
            if (ns <= kold) ns++;
            int nsp1 = ns + 1;
            if (k >= ns) {
                beta[ns] = 1.0;
                alpha[ns] = 1.0 / ns;
                double temp1 = h * ns;
                sig[nsp1] = 1.0;
                for (int i = nsp1; i <= k; i++) {
                    double temp2 = psi[i - 1];
                    psi[i - 1] = temp1;
                    beta[i] = beta[i - 1] * psi[i - 1] / temp2;
                    temp1 = temp2 + h;
                    alpha[i] = h / temp1;
                    sig[i + 1] = i * alpha[i] * sig[i];
                }
                psi[k] = temp1;
                if (ns <= 1) {
                    for (int iq = 1; iq <= k; iq++) {
                        v[iq] = 1.0 / (iq * (iq + 1.0));
                        w[iq] = v[iq];
                    }
                } else {
                    if (k > kold) {
                        v[k] = 1.0 / (k * (k + 1.0));
                        for (int j = 1; j <= ns - 2; j++) {
                            int i = k - j;
                            v[i] -= alpha[j + 1] * v[i + 1];
                        }
                    }
                    for (int iq = 1; iq <= kp1 - ns; iq++) {
                        v[iq] -= alpha[ns] * v[iq + 1];
                        w[iq] = v[iq];
                    }
                    g[nsp1] = w[1];
                }
                for (int i = ns + 2; i <= kp1; i++) {
                    for (int iq = 1; iq <= kp2 - i; iq++) w[iq] -= alpha[i - 1] * w[iq + 1];
                    g[i] = w[1];
                }
            }
            /* block 2: predict */
            for (int i = nsp1; i <= k; i++)
                for (int l = 0; l < n; l++) PHI(i)[l] *= beta[i];
            for (int l = 0; l < n; l++) {
                PHI(kp2)[l] = PHI(kp1)[l];
                PHI(kp1)[l] = 0.0;
                p[l] = 0.0;
            }
            for (int j = 1; j <= k; j++) {
                int i = kp1 - j;
                for (int l = 0; l < n; l++) {
                    p[l] += g[i] * PHI(i)[l];
                    PHI(i)[l] += PHI(i + 1)[l];
                }
            }
            for (int l = 0; l < n; l++) p[l] = y[l] + h * p[l];
            t = x_old + h;
            absh = h;
            status = rhs(&r, t, p, yp);
            if (status) break;
            /* block 3: local error at orders k-2, k-1, k */
            double s2 = 0.0, s1 = 0.0, s0 = 0.0;
            int finite = all_finite(p, n) && all_finite(yp, n);
            for (int l = 0; l < n && finite; l++) {
                double inv = 1.0 / wt[l], d = yp[l] - PHI(1)[l];
                if (km2 > 0) s2 += ((PHI(km1)[l] + d) * inv) * ((PHI(km1)[l] + d) * inv);
                if (km2 >= 0) s1 += ((PHI(k)[l] + d) * inv) * ((PHI(k)[l] + d) * inv);
                s0 += (d * inv) * (d * inv);
            }
            if (km2 > 0) erkm2 = absh * sig[km1] * gstar[km2] * sqrt(s2 / n);
            if (km2 >= 0) erkm1 = absh * sig[k] * gstar[km1] * sqrt(s1 / n);
            double temp5 = absh * sqrt(s0 / n);
            double err = finite ? temp5 * (g[k] - g[kp1]) : INFINITY;
            erk = finite ? temp5 * sig[kp1] * gstar[k] : INFINITY;
            knew = k;
            if (km2 > 0 && fmax(erkm1, erkm2) <= erk) knew = km1;
            if (km2 == 0 && erkm1 <= 0.5 * erk) knew = km1;
            if (err <= 1.0) break;
            /* block 4: the step failed: restore, and retry with a smaller step */
            rejected++;
            phase1 = 0;
            t = x_old;
            for (int i = 1; i <= k; i++)
                for (int l = 0; l < n; l++)
                    PHI(i)[l] = (PHI(i)[l] - PHI(i + 1)[l]) / beta[i];
            for (int i = 2; i <= k; i++) psi[i - 1] = psi[i] - h;
            ifail++;
            double temp2 = 0.5;
            if (ifail > 3 && isfinite(erk) && p5eps < 0.25 * erk) temp2 = sqrt(p5eps / erk);
            if (ifail >= 3) knew = 1;
            h *= temp2;
            k = knew;
            ns = 0;
            if (h < fouru * fabs(t) || !(h > 0.0)) {
                status = MB_STEP_TOO_SMALL;
                break;
            }
            if (accepted + rejected - at_output >= max_steps) {
                status = MB_TOO_MANY_STEPS;
                break;
            }
        }
        if (status) break;
        /* block 5: the step succeeded: correct, evaluate, update the differences */
        int kp1 = k + 1, kp2 = k + 2, km1 = k - 1;
        kold = k;
        hold = h;
        for (int l = 0; l < n; l++) y[l] = p[l] + h * g[kp1] * (yp[l] - PHI(1)[l]);
        status = rhs(&r, t, y, yp);
        if (status) break;
        if (!all_finite(y, n) || !all_finite(yp, n)) {
            status = MB_STEP_TOO_SMALL;
            break;
        }
        for (int l = 0; l < n; l++) {
            PHI(kp1)[l] = yp[l] - PHI(1)[l];
            PHI(kp2)[l] = PHI(kp1)[l] - PHI(kp2)[l];
        }
        for (int i = 1; i <= k; i++)
            for (int l = 0; l < n; l++) PHI(i)[l] += PHI(kp1)[l];
        accepted++;
        /* outputs passed by this step */
        int written_before = written;
        while (written < n_out && t_out[written] < t) {
            adams_interpolate(n, t, y, t_out[written], x_out + (size_t)written * n, kold, phi,
                              psi);
            written++;
        }
        while (written < n_out && t_out[written] <= t) {
            memcpy(x_out + (size_t)written * n, y, sizeof(double) * (size_t)n);
            written++;
        }
        if (written > written_before) at_output = accepted + rejected;
        /* the order for the next step */
        double erkp1 = 0.0;
        if (knew == km1 || k == MAX_ORDER) phase1 = 0;
        if (phase1) {
            k = kp1;
            erk = erkp1;
        } else if (knew == km1) {
            k = km1;
            erk = erkm1;
        } else if (kp1 <= ns) {
            for (int l = 0; l < n; l++) scratch[l] = PHI(kp2)[l];
            erkp1 = absh * gstar[kp1] * rms_scaled(scratch, wt, n);
            if (k > 1) {
                if (erkm1 <= fmin(erk, erkp1)) {
                    k = km1;
                    erk = erkm1;
                } else if (!(erkp1 >= erk || k == MAX_ORDER)) {
                    k = kp1;
                    erk = erkp1;
                }
            } else if (erkp1 < 0.5 * erk) {
                k = kp1;
                erk = erkp1;
            }
        }
        /* the next step: double it, keep it, or shrink it */
        double hnew = h + h;
        if (!phase1 && !(p5eps >= erk * two[k + 1])) {
            hnew = h;
            if (p5eps < erk) {
                double ratio = pow(p5eps / erk, 1.0 / (k + 1));
                hnew = fmax(absh * fmax(0.5, fmin(0.9, ratio)), fouru * fabs(t));
            }
        }
        h = hnew;
    }
    report(info, h, t, accepted, rejected, r.evaluations, written);
    free(r.arg), free(r.res), free(phi);
    return status;
}
#undef PHI
