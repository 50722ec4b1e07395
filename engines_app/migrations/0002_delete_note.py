# The demo notes moved to the reference project's demo app (demo.0001 copies
# the rows first); a site without the demo app simply loses the empty table.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('engines_app', '0001_initial'),
    ]

    operations = [
        migrations.DeleteModel(
            name='Note',
        ),
    ]
