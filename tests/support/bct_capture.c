#include "bct_capture.h"

#include <string.h>
#include <unistd.h>

int bct_capture_start(struct bct_capture *c)
{
	memset(c, 0, sizeof(*c));
	fflush(stderr);
	if ((c->f = tmpfile()) == NULL)
		return -1;
	if ((c->saved = dup(STDERR_FILENO)) < 0 || dup2(fileno(c->f), STDERR_FILENO) < 0) {
		if (c->saved >= 0)
			close(c->saved);
		fclose(c->f);
		c->f = NULL;
		return -1;
	}
	return 0;
}

void bct_capture_end(struct bct_capture *c)
{
	size_t n;

	if (c->f == NULL)
		return;
	fflush(stderr);
	(void)dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	rewind(c->f);
	n = fread(c->text, 1, sizeof(c->text) - 1, c->f);
	c->text[n] = '\0';
	fclose(c->f);
	c->f = NULL;
}
