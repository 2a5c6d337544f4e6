/* What the code under test writes to stderr (bc_log lines) while it runs: a test
 * starts a capture, calls the code, ends the capture and reads text. */
#ifndef BCT_CAPTURE_H
#define BCT_CAPTURE_H

#include <stdio.h>

struct bct_capture {
	FILE *f;
	int saved;
	char text[4096]; /* what was written, NUL-terminated (truncated to fit) */
};

/* 0, or -1 when stderr could not be redirected (nothing is then redirected). */
int bct_capture_start(struct bct_capture *c);
/* Restores stderr and fills c->text. */
void bct_capture_end(struct bct_capture *c);

#endif
