/* libksmissing.so: only for linking dyn_missing (never installed anywhere). */
int ksmissing_value(void) { return 42; }
