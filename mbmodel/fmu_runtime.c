/* mbmodel FMI 2.0 runtime: Model Exchange and Co-Simulation around the model's generated
 * functions (mbm_ode, mbm_alg, mbm_alg_jac, mbm_out, mbm_tev, mbm_pcheck, written by casadi
 * above this text). The sizes and start values come as macros from mbmodel/fmu.py.
 *
 * Value references: [0, NX) states, [NX, 2 NX) their derivatives, then NU inputs, NP
 * parameters and NY other variables. Torn nonlinear blocks (NZ algebraic variables) are
 * solved by Newton's method with a pivoted LU of their Jacobian. Co-Simulation integrates
 * with the Dormand-Prince 5(4) pair under error control and stops at the time events. */

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FMI 2.0 platform types and callback structures, as the standard defines them. */
typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef char fmi2Char;
typedef const fmi2Char *fmi2String;
typedef char fmi2Byte;
#define fmi2True 1
#define fmi2False 0
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime,
               fmi2Terminated } fmi2StatusKind;
typedef void (*fmi2CallbackLogger)(fmi2ComponentEnvironment, fmi2String, fmi2Status,
                                   fmi2String, fmi2String, ...);
typedef void *(*fmi2CallbackAllocateMemory)(size_t, size_t);
typedef void (*fmi2CallbackFreeMemory)(void *);
typedef void (*fmi2StepFinished)(fmi2ComponentEnvironment, fmi2Status);
typedef struct {
  fmi2CallbackLogger logger;
  fmi2CallbackAllocateMemory allocateMemory;
  fmi2CallbackFreeMemory freeMemory;
  fmi2StepFinished stepFinished;
  fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;
typedef struct {
  fmi2Boolean newDiscreteStatesNeeded;
  fmi2Boolean terminateSimulation;
  fmi2Boolean nominalsOfContinuousStatesChanged;
  fmi2Boolean valuesOfContinuousStatesChanged;
  fmi2Boolean nextEventTimeDefined;
  fmi2Real nextEventTime;
} fmi2EventInfo;

#define FMI_EXPORT __attribute__((visibility("default")))
#define STALE_DERIVATIVES 1
#define STALE_OUTPUTS 2
#define STALE_ALL 3
#define SIZE(n) ((n) > 0 ? (n) : 1)
#define VR_DER (NX)
#define VR_U (2 * NX)
#define VR_P (2 * NX + NU)
#define VR_Y (2 * NX + NU + NP)
#define VR_END (2 * NX + NU + NP + NY)

static const double X_START[SIZE(NX)] = {X_START_VALUES};
static const double Z_START[SIZE(NZ)] = {Z_START_VALUES};
static const double U_START[SIZE(NU)] = {U_START_VALUES};
static const double P_START[SIZE(NP_ALL)] = {P_START_VALUES};
/* Range of each settable parameter (its declared min and max). */
static const double P_MIN[SIZE(NP)] = {P_MIN_VALUES};
static const double P_MAX[SIZE(NP)] = {P_MAX_VALUES};
static const char *const P_NAME[SIZE(NP)] = {P_NAME_VALUES};
/* What mbm_pcheck's entries must satisfy: kind 0, within [PCHECK_MIN, PCHECK_MAX] (a
 * parameter computed from others); 1, nonzero (a component's condition); 2, nonzero and
 * finite (a divisor the equations were sorted with). */
static const int PCHECK_KIND[SIZE(N_PCHECK)] = {PCHECK_KIND_VALUES};
static const char *const PCHECK_TEXT[SIZE(N_PCHECK)] = {PCHECK_TEXT_VALUES};
static const double PCHECK_MIN[SIZE(N_PCHECK)] = {PCHECK_MIN_VALUES};
static const double PCHECK_MAX[SIZE(N_PCHECK)] = {PCHECK_MAX_VALUES};
/* The message of each run-time condition (mbm_asserts' entries, nonzero where it holds). */
static const char *const ASSERT_TEXT[SIZE(N_ASSERT)] = {ASSERT_TEXT_VALUES};
/* Position of each of the NY other variables in the outputs of mbm_out. */
static const int Y_INDEX[SIZE(NY)] = {Y_INDEX_VALUES};

typedef struct {
  fmi2CallbackFunctions cb;
  char name[256];
  fmi2Type type;
  int logging;
  double t;
  double x[SIZE(NX)], z[SIZE(NZ)], u[SIZE(NU)], p[SIZE(NP_ALL)];
  /* the states whose start the importer set (the others follow the parameters) */
  unsigned char x_set[SIZE(NX)];
  double xdot[SIZE(NX)], out[SIZE(N_OUT)];
  double tev[SIZE(N_TEV)];
  int stale; /* what must be computed again: STALE_DERIVATIVES | STALE_OUTPUTS */
  double rtol, atol, h;
  /* work space of the generated functions and of the integrator */
  const casadi_real *arg[SZ_ARG];
  casadi_real *res[SZ_RES];
  casadi_int iw[SIZE(SZ_IW)];
  casadi_real w[SIZE(SZ_W)];
  double g[SIZE(NZ)], jac[SIZE(NZ * NZ)];
  double k[7][SIZE(NX)], xs[SIZE(NX)], xe[SIZE(NX)];
#if HAS_INIT
  /* the initialization's unknowns (x, z), residuals and Jacobian; the states' start
   * values as set, which the states the conditions leave free keep */
  double w_init[NX + NZ], r_init[NX + NZ], jac_init[(NX + NZ) * (NX + NZ)];
  double x_start[SIZE(NX)];
#endif
} Instance;

static void say(Instance *c, fmi2Status status, const char *category, const char *fmt, ...) {
  char text[1024];
  va_list args;
  if (!c->cb.logger || (!c->logging && status == fmi2OK)) return;
  va_start(args, fmt);
  vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  c->cb.logger(c->cb.componentEnvironment, c->name, status, category, "%s", text);
}

/* Inputs of every generated function: x, z, u, p, t. */
static int call(Instance *c, int (*f)(const casadi_real **, casadi_real **, casadi_int *,
                                      casadi_real *, int),
                const double *x, const double *z, double *out) {
  c->arg[0] = x;
  c->arg[1] = z;
  c->arg[2] = c->u;
  c->arg[3] = c->p;
  c->arg[4] = &c->t;
  c->res[0] = out;
  return f(c->arg, c->res, c->iw, c->w, 0);
}

/* Solves a d = b in place (b becomes d) by LU with partial pivoting; a is column-major
 * n x n and is overwritten. -1 if a is singular. */
static int lu_solve(double *a, double *b, int n) {
  int i, j, r;
  for (j = 0; j < n; ++j) {
    int best = j;
    for (r = j + 1; r < n; ++r)
      if (fabs(a[j * n + r]) > fabs(a[j * n + best])) best = r;
    if (a[j * n + best] == 0.0) return -1;
    if (best != j) {
      for (i = 0; i < n; ++i) {
        double tmp = a[i * n + j];
        a[i * n + j] = a[i * n + best];
        a[i * n + best] = tmp;
      }
      { double tmp = b[j]; b[j] = b[best]; b[best] = tmp; }
    }
    for (r = j + 1; r < n; ++r) {
      double m = a[j * n + r] / a[j * n + j];
      for (i = j; i < n; ++i) a[i * n + r] -= m * a[i * n + j];
      b[r] -= m * b[j];
    }
  }
  for (j = n - 1; j >= 0; --j) {
    double s = b[j];
    for (i = j + 1; i < n; ++i) s -= a[i * n + j] * b[i];
    b[j] = s / a[j * n + j];
  }
  return 0;
}

/* Newton's method on the torn blocks' residuals g(x, z) = 0 for z, from the last z. */
static int solve_algebraic(Instance *c, const double *x) {
#if NZ > 0
  int it, i;
  for (it = 0; it < 50; ++it) {
    double step = 0.0, size = 0.0;
    call(c, mbm_alg, x, c->z, c->g);
    call(c, mbm_alg_jac, x, c->z, c->jac); /* column-major NZ x NZ */
    if (lu_solve(c->jac, c->g, NZ)) {
      say(c, fmi2Error, "logStatusError", "the Jacobian of the torn algebraic blocks is singular");
      return -1;
    }
    for (i = 0; i < NZ; ++i) {
      c->z[i] -= c->g[i];
      step = fmax(step, fabs(c->g[i]));
      size = fmax(size, fabs(c->z[i]));
    }
    if (step <= 1e-13 * (1.0 + size)) return 0;
  }
  say(c, fmi2Error, "logStatusError", "Newton's method on the torn algebraic blocks did not converge at t = %g", c->t);
  return -1;
#else
  (void)c; (void)x;
  return 0;
#endif
}

static int derivatives(Instance *c, const double *x, double *xdot) {
  if (solve_algebraic(c, x)) return -1;
#if NX > 0
  call(c, mbm_ode, x, c->z, xdot);
#else
  (void)xdot;
#endif
  return 0;
}

/* The derivatives (and the algebraic variables), then the other variables if ``need``s
 * them: an integrator asking for derivatives does not pay for every variable. */
static int refresh(Instance *c, int need) {
  if (c->stale & STALE_DERIVATIVES) {
    if (derivatives(c, c->x, c->xdot)) return -1;
    c->stale &= ~STALE_DERIVATIVES;
  }
  if ((need & STALE_OUTPUTS) && (c->stale & STALE_OUTPUTS)) {
    call(c, mbm_out, c->x, c->z, c->out);
    c->stale &= ~STALE_OUTPUTS;
  }
  return 0;
}

static void reset(Instance *c) {
  memcpy(c->x, X_START, sizeof c->x);
  memset(c->x_set, 0, sizeof c->x_set);
  memcpy(c->z, Z_START, sizeof c->z);
  memcpy(c->u, U_START, sizeof c->u);
  memcpy(c->p, P_START, sizeof c->p);
  c->t = 0.0;
  c->stale = STALE_ALL;
  c->rtol = DEFAULT_RTOL;
  c->atol = DEFAULT_ATOL;
  c->h = 0.0;
}

/* The time events after t (the model's discontinuities at known times). */
static void time_events(Instance *c) {
#if N_TEV > 0
  c->arg[0] = c->p;
  c->res[0] = c->tev;
  mbm_tev(c->arg, c->res, c->iw, c->w, 0);
#else
  (void)c;
#endif
}

/* The parameter values as simulate() checks them (the settable ones are checked as they
 * are set): 0 if they hold, else -1 with the first that does not said. */
static int check_parameters(Instance *c) {
#if N_PCHECK > 0
  double v[N_PCHECK];
  int i;
  c->arg[0] = c->p;
  c->res[0] = v;
  mbm_pcheck(c->arg, c->res, c->iw, c->w, 0);
  for (i = 0; i < N_PCHECK; ++i) {
    int kind = PCHECK_KIND[i];
    if (kind == 0 && !(v[i] >= PCHECK_MIN[i] && v[i] <= PCHECK_MAX[i])) {
      say(c, fmi2Error, "logStatusError", "%s = %g is outside its bounds [%g, %g]; choose "
          "parameter values that keep it within them", PCHECK_TEXT[i], v[i], PCHECK_MIN[i],
          PCHECK_MAX[i]);
      return -1;
    }
    if (kind == 1 && v[i] == 0.0) {
      say(c, fmi2Error, "logStatusError", "%s (does not hold for the parameter values "
          "given)", PCHECK_TEXT[i]);
      return -1;
    }
    if (kind == 2 && (v[i] == 0.0 || !isfinite(v[i]))) {
      say(c, fmi2Error, "logStatusError", "with these parameter values %s (its divisor is "
          "%g); change them, or export the model compiled with them", PCHECK_TEXT[i], v[i]);
      return -1;
    }
  }
#else
  (void)c;
#endif
  return 0;
}

/* The components' run-time conditions (mb.Assert on variables) at the current point, as
 * simulate() checks them at its output points: 0 if they hold, else -1 with the first
 * that does not said. */
static int check_asserts(Instance *c) {
#if N_ASSERT > 0
  double v[N_ASSERT];
  int i;
  if (refresh(c, STALE_DERIVATIVES)) return -1;
  call(c, mbm_asserts, c->x, c->z, v);
  for (i = 0; i < N_ASSERT; ++i)
    if (v[i] == 0.0 || !isfinite(v[i])) {
      say(c, fmi2Error, "logStatusError", "%s (does not hold at t = %g)", ASSERT_TEXT[i],
          c->t);
      return -1;
    }
#else
  (void)c;
#endif
  return 0;
}

#if HAS_STARTS
/* Start values given by parameters (Guess(self.phi0)) follow them as set, as simulate()'s
 * do; a state's start the importer set stays. */
static void starts_of_parameters(Instance *c) {
  double s[SIZE(NX + NZ)];
  int i;
  c->arg[0] = c->p;
  c->res[0] = s;
  mbm_starts(c->arg, c->res, c->iw, c->w, 0);
  for (i = 0; i < NX; ++i)
    if (!c->x_set[i]) c->x[i] = s[i];
  for (i = 0; i < NZ; ++i) c->z[i] = s[NX + i];
}
#endif

#if HAS_INIT
/* The initialization as mbmodel solves it (initial equations, fixed starts, the states the
 * conditions leave free held at their start values as set), by Newton's method from the
 * start values: parameters set in the FMU move the start it computes. */
static int initialize(Instance *c) {
  int it, i;
  memcpy(c->x_start, c->x, sizeof c->x_start);
  for (i = 0; i < NX; ++i) c->w_init[i] = c->x[i];
  for (i = 0; i < NZ; ++i) c->w_init[NX + i] = c->z[i];
  for (it = 0; it < 100; ++it) {
    double step = 0.0, size = 0.0, left = 0.0;
    c->arg[0] = c->w_init;
    c->arg[1] = c->w_init + NX;
    c->arg[2] = c->u;
    c->arg[3] = c->p;
    c->arg[4] = &c->t;
    c->arg[5] = c->x_start;
    c->res[0] = c->r_init;
    mbm_init(c->arg, c->res, c->iw, c->w, 0);
    for (i = 0; i < NX + NZ; ++i) left = fmax(left, fabs(c->r_init[i]));
    c->res[0] = c->jac_init;
    mbm_init_jac(c->arg, c->res, c->iw, c->w, 0);
    if (!isfinite(left)) break;
    if (lu_solve(c->jac_init, c->r_init, NX + NZ)) {
      say(c, fmi2Error, "logStatusError", "initialization: the Jacobian of the initial "
          "conditions is singular at the start values");
      return -1;
    }
    for (i = 0; i < NX + NZ; ++i) {
      c->w_init[i] -= c->r_init[i];
      step = fmax(step, fabs(c->r_init[i]));
      size = fmax(size, fabs(c->w_init[i]));
    }
    if (step <= 1e-13 * (1.0 + size)) {
      for (i = 0; i < NX; ++i) c->x[i] = c->w_init[i];
      for (i = 0; i < NZ; ++i) c->z[i] = c->w_init[NX + i];
      return 0;
    }
  }
  say(c, fmi2Error, "logStatusError", "initialization: Newton's method on the initial "
      "conditions did not converge from the start values (check the parameters set)");
  return -1;
}
#endif

/* Relative distance below which a time event and a communication point are the same. */
#define EVENT_SNAP 1e-12

static int next_event(Instance *c, double after, double *when) {
  int i, found = 0;
  for (i = 0; i < N_TEV; ++i)
    if (c->tev[i] > after && (!found || c->tev[i] < *when)) {
      *when = c->tev[i];
      found = 1;
    }
  return found;
}

/* ---- common functions ------------------------------------------------------------- */
FMI_EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
FMI_EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

FMI_EXPORT fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid,
                                         fmi2String resources,
                                         const fmi2CallbackFunctions *functions,
                                         fmi2Boolean visible, fmi2Boolean logging) {
  Instance *c;
  (void)resources; (void)visible;
  if (!guid || strcmp(guid, MODEL_GUID) != 0) {
    if (functions && functions->logger)
      functions->logger(functions->componentEnvironment, name, fmi2Error, "logStatusError",
                        "the GUID %s does not belong to this FMU (%s)", guid ? guid : "(none)",
                        MODEL_GUID);
    return NULL;
  }
  c = (Instance *)calloc(1, sizeof(Instance));
  if (!c) return NULL;
  if (functions) c->cb = *functions;
  snprintf(c->name, sizeof c->name, "%s", name ? name : "");
  c->type = type;
  c->logging = logging;
  reset(c);
  return c;
}

FMI_EXPORT void fmi2FreeInstance(fmi2Component c) { free(c); }

FMI_EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n,
                                          const fmi2String categories[]) {
  (void)n; (void)categories;
  ((Instance *)c)->logging = on;
  return fmi2OK;
}

FMI_EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined,
                                          fmi2Real tolerance, fmi2Real startTime,
                                          fmi2Boolean stopTimeDefined, fmi2Real stopTime) {
  Instance *m = (Instance *)c;
  (void)stopTimeDefined; (void)stopTime;
  m->t = startTime;
  if (toleranceDefined && tolerance > 0) {
    m->rtol = tolerance;
    m->atol = tolerance * 1e-2;
  }
  m->stale = STALE_ALL;
  return fmi2OK;
}

FMI_EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c) { (void)c; return fmi2OK; }

FMI_EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c) {
  Instance *m = (Instance *)c;
  if (check_parameters(m)) return fmi2Error;
#if HAS_STARTS
  starts_of_parameters(m);
#endif
#if HAS_INIT
  if (initialize(m)) return fmi2Error;
#endif
  time_events(m);
  m->stale = STALE_ALL;
  return refresh(m, STALE_ALL) || check_asserts(m) ? fmi2Error : fmi2OK;
}

FMI_EXPORT fmi2Status fmi2Terminate(fmi2Component c) { (void)c; return fmi2OK; }
FMI_EXPORT fmi2Status fmi2Reset(fmi2Component c) { reset((Instance *)c); return fmi2OK; }

FMI_EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                  fmi2Real value[]) {
  Instance *m = (Instance *)c;
  size_t i;
  if (n && refresh(m, STALE_ALL)) return fmi2Error;
  for (i = 0; i < n; ++i) {
    unsigned r = vr[i];
    if (r < VR_DER) value[i] = m->x[r];
    else if (r < VR_U) value[i] = m->xdot[r - VR_DER];
    else if (r < VR_P) value[i] = m->u[r - VR_U];
    else if (r < VR_Y) value[i] = m->p[r - VR_P];
    else if (r < VR_END) value[i] = m->out[Y_INDEX[r - VR_Y]];
    else {
      say(m, fmi2Error, "logStatusError", "no Real variable has the value reference %u", r);
      return fmi2Error;
    }
  }
  return fmi2OK;
}

FMI_EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                  const fmi2Real value[]) {
  Instance *m = (Instance *)c;
  size_t i;
  for (i = 0; i < n; ++i) {
    unsigned r = vr[i];
    if (r < VR_DER) {
      m->x[r] = value[i];
      m->x_set[r] = 1;
    } else if (r >= VR_U && r < VR_P) m->u[r - VR_U] = value[i];
    else if (r >= VR_P && r < VR_Y) {
      unsigned k = r - VR_P;
      if (!(value[i] >= P_MIN[k] && value[i] <= P_MAX[k])) {  /* also refuses NaN */
        say(m, fmi2Error, "logStatusError", "parameter '%s' = %g is outside its bounds [%g, %g]; "
            "choose a value within them (it keeps %g)", P_NAME[k], value[i], P_MIN[k], P_MAX[k],
            m->p[P_POSITION(k)]);
        return fmi2Error;
      }
      m->p[P_POSITION(k)] = value[i];
      time_events(m);
    } else {
      say(m, fmi2Error, "logStatusError", "the variable with value reference %u cannot be set", r);
      return fmi2Error;
    }
  }
  m->stale = STALE_ALL;
  return fmi2OK;
}

static fmi2Status none(Instance *m, size_t n, const char *kind) {
  if (n == 0) return fmi2OK;
  say(m, fmi2Error, "logStatusError", "the model has no %s variables", kind);
  return fmi2Error;
}

FMI_EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[]) { (void)vr; (void)v; return none((Instance *)c, n, "Integer"); }
FMI_EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[]) { (void)vr; (void)v; return none((Instance *)c, n, "Integer"); }
FMI_EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[]) { (void)vr; (void)v; return none((Instance *)c, n, "Boolean"); }
FMI_EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[]) { (void)vr; (void)v; return none((Instance *)c, n, "Boolean"); }
FMI_EXPORT fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String v[]) { (void)vr; (void)v; return none((Instance *)c, n, "String"); }
FMI_EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String v[]) { (void)vr; (void)v; return none((Instance *)c, n, "String"); }

static fmi2Status unsupported(fmi2Component c, const char *what) {
  say((Instance *)c, fmi2Error, "logStatusError", "%s is not supported by this FMU", what);
  return fmi2Error;
}

FMI_EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s) { (void)s; return unsupported(c, "fmi2GetFMUstate"); }
FMI_EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) { (void)s; return unsupported(c, "fmi2SetFMUstate"); }
FMI_EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s) { (void)s; return unsupported(c, "fmi2FreeFMUstate"); }
FMI_EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *n) { (void)s; (void)n; return unsupported(c, "fmi2SerializedFMUstateSize"); }
FMI_EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte b[], size_t n) { (void)s; (void)b; (void)n; return unsupported(c, "fmi2SerializeFMUstate"); }
FMI_EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte b[], size_t n, fmi2FMUstate *s) { (void)s; (void)b; (void)n; return unsupported(c, "fmi2DeSerializeFMUstate"); }
FMI_EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu, const fmi2ValueReference z[], size_t nz, const fmi2Real dv[], fmi2Real dz[]) { (void)u; (void)nu; (void)z; (void)nz; (void)dv; (void)dz; return unsupported(c, "fmi2GetDirectionalDerivative"); }

/* ---- Model Exchange ---------------------------------------------------------------- */
FMI_EXPORT fmi2Status fmi2EnterEventMode(fmi2Component c) { (void)c; return fmi2OK; }

FMI_EXPORT fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *info) {
  Instance *m = (Instance *)c;
  double when = 0.0;
  info->newDiscreteStatesNeeded = fmi2False;
  info->terminateSimulation = fmi2False;
  info->nominalsOfContinuousStatesChanged = fmi2False;
  info->valuesOfContinuousStatesChanged = fmi2False;
  info->nextEventTimeDefined =
      next_event(m, m->t + EVENT_SNAP * fmax(1.0, fabs(m->t)), &when) ? fmi2True : fmi2False;
  info->nextEventTime = when;
  return fmi2OK;
}

FMI_EXPORT fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) { (void)c; return fmi2OK; }

FMI_EXPORT fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noPrior,
                                                  fmi2Boolean *enterEventMode,
                                                  fmi2Boolean *terminateSimulation) {
  (void)noPrior;
  *enterEventMode = fmi2False;
  *terminateSimulation = fmi2False;
  return check_asserts((Instance *)c) ? fmi2Error : fmi2OK;
}

FMI_EXPORT fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) {
  Instance *m = (Instance *)c;
  m->t = t;
  m->stale = STALE_ALL;
  return fmi2OK;
}

FMI_EXPORT fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t n) {
  Instance *m = (Instance *)c;
  if (n != NX) return unsupported(c, "setting a number of states other than the model's");
  memcpy(m->x, x, n * sizeof(double));
  m->stale = STALE_ALL;
  return fmi2OK;
}

FMI_EXPORT fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real d[], size_t n) {
  Instance *m = (Instance *)c;
  if (n != NX) return unsupported(c, "asking for a number of derivatives other than the model's");
  if (refresh(m, STALE_DERIVATIVES)) return fmi2Error;
  memcpy(d, m->xdot, n * sizeof(double));
  return fmi2OK;
}

FMI_EXPORT fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real e[], size_t n) {
  (void)e;
  return n == 0 ? fmi2OK : unsupported(c, "event indicators");
}

FMI_EXPORT fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t n) {
  Instance *m = (Instance *)c;
  if (n != NX) return unsupported(c, "asking for a number of states other than the model's");
  memcpy(x, m->x, n * sizeof(double));
  return fmi2OK;
}

FMI_EXPORT fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x[], size_t n) {
  size_t i;
  (void)c;
  for (i = 0; i < n; ++i) x[i] = 1.0;
  return fmi2OK;
}

/* ---- Co-Simulation ---------------------------------------------------------------- */
/* Dormand-Prince 5(4): nodes, weights of the 5th-order solution and of the error. */
static const double DP_C[7] = {0.0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1.0, 1.0};
static const double DP_A[7][6] = {
    {0},
    {1.0 / 5},
    {3.0 / 40, 9.0 / 40},
    {44.0 / 45, -56.0 / 15, 32.0 / 9},
    {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
    {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
    {35.0 / 384, 0.0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}};
static const double DP_E[7] = {71.0 / 57600, 0.0, -71.0 / 16695, 71.0 / 1920,
                               -17253.0 / 339200, 22.0 / 525, -1.0 / 40};

/* Integrate from m->t to t_end (no time event inside), adapting the step. When t_end is a
 * time event the right-hand side is evaluated no later than just before it: the step ends
 * on the left limit of the discontinuity. */
static int integrate(Instance *m, double t_end, int at_event) {
#if NX > 0
  int i, s, j, rejected = 0;
  double latest = at_event ? nextafter(t_end, -INFINITY) : INFINITY;
  if (m->h <= 0.0) m->h = 1e-4 * fmax(t_end - m->t, 1e-10);
  if (derivatives(m, m->x, m->k[0])) return -1;
  while (m->t < t_end) {
    double h = fmin(m->h, t_end - m->t), err = 0.0, t = m->t;
    int last = (h >= t_end - m->t);
    for (s = 1; s < 7; ++s) {
      for (i = 0; i < NX; ++i) {
        double acc = 0.0;
        for (j = 0; j < s; ++j) acc += DP_A[s][j] * m->k[j][i];
        m->xs[i] = m->x[i] + h * acc;
      }
      m->t = fmin(t + DP_C[s] * h, latest);
      if (derivatives(m, m->xs, m->k[s])) { m->t = t; return -1; }
    }
    for (i = 0; i < NX; ++i) { /* xs holds the 5th-order solution (stage 7 = FSAL) */
      double e = 0.0, scale;
      for (s = 0; s < 7; ++s) e += DP_E[s] * m->k[s][i];
      scale = m->atol + m->rtol * fmax(fabs(m->x[i]), fabs(m->xs[i]));
      err += (h * e / scale) * (h * e / scale);
    }
    err = sqrt(err / NX);
    if (!(err <= 1.0) && h <= 1e-14 * fmax(1.0, fabs(t))) {
      say(m, fmi2Error, "logStatusError", "the integration failed at t = %g: the step size "
          "went to zero (a singularity, or a solution that is not finite)", t);
      m->t = t;
      return -1;
    }
    if (err <= 1.0) {
      m->t = last ? t_end : t + h;
      memcpy(m->x, m->xs, sizeof(double) * NX);
      memcpy(m->k[0], m->k[6], sizeof(double) * NX);
      m->h = h * fmin(5.0, fmax(0.2, 0.9 * pow(fmax(err, 1e-10), -0.2)));
      if (rejected) m->h = fmin(m->h, h);
      rejected = 0;
    } else {
      m->t = t;
      m->h = h * (err == err ? fmax(0.2, 0.9 * pow(err, -0.2)) : 0.2);
      rejected = 1;
    }
  }
#else
  (void)at_event;
#endif
  m->t = t_end;
  return 0;
}

FMI_EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real h, fmi2Boolean noPrior) {
  Instance *m = (Instance *)c;
  double t_end = t + h, when = 0.0;
  (void)noPrior;
  if (fabs(t - m->t) > 1e-9 * fmax(1.0, fabs(t))) {
    say(m, fmi2Error, "logStatusError", "fmi2DoStep from t = %g, but the FMU is at t = %g", t, m->t);
    return fmi2Error;
  }
  m->t = t;
  /* A time event a rounding error after the step's start (communication points summed
   * from step sizes) is where the step starts: the model is already past it. */
  if (next_event(m, t - EVENT_SNAP * fmax(1.0, fabs(t)), &when) &&
      when <= t + EVENT_SNAP * fmax(1.0, fabs(t))) {
    m->t = when;
    m->h = 0.0;
  }
  while (next_event(m, m->t, &when) && when < t_end - EVENT_SNAP * fmax(1.0, fabs(t_end))) {
    if (integrate(m, when, 1)) return fmi2Error;
    m->h = 0.0; /* a new start after the discontinuity */
  }
  if (integrate(m, t_end, next_event(m, m->t, &when) &&
                          when <= t_end + EVENT_SNAP * fmax(1.0, fabs(t_end)))) return fmi2Error;
  m->stale = STALE_ALL;
  return refresh(m, STALE_ALL) || check_asserts(m) ? fmi2Error : fmi2OK;
}

FMI_EXPORT fmi2Status fmi2CancelStep(fmi2Component c) { return unsupported(c, "fmi2CancelStep"); }
FMI_EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer o[], const fmi2Real v[]) { (void)vr; (void)o; (void)v; return n ? unsupported(c, "input derivatives") : fmi2OK; }
FMI_EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer o[], fmi2Real v[]) { (void)vr; (void)o; (void)v; return n ? unsupported(c, "output derivatives") : fmi2OK; }
FMI_EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *v) { (void)s; (void)v; return unsupported(c, "fmi2GetStatus"); }
FMI_EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *v) {
  if (s == fmi2LastSuccessfulTime) { *v = ((Instance *)c)->t; return fmi2OK; }
  return unsupported(c, "this fmi2GetRealStatus kind");
}
FMI_EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *v) { (void)s; (void)v; return unsupported(c, "fmi2GetIntegerStatus"); }
FMI_EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *v) { (void)s; (void)v; return unsupported(c, "fmi2GetBooleanStatus"); }
FMI_EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *v) { (void)s; (void)v; return unsupported(c, "fmi2GetStringStatus"); }
