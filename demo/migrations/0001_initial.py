# The demo's notes move here from engines_app (0.1.0 kept them there, keyed
# by the tenant's slug); they are now keyed by the tenant's primary key.
# Rows are copied before engines_app.0002 drops the old table; a row whose
# slug names no tenant any more cannot be keyed and is not copied.

import django.db.models.deletion
from django.db import migrations, models

OLD_TABLE = "engines_app_note"


def copy_notes(apps, schema_editor):
    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return
    alias = connection.alias
    OldNote = apps.get_model("engines_app", "Note")
    Note = apps.get_model("demo", "Note")
    Tenant = apps.get_model("mcp_gateway", "Tenant")
    tenants = dict(Tenant.objects.using(alias).values_list("slug", "pk"))
    notes = [
        Note(
            tenant_id=tenants[old.tenant],
            title=old.title,
            body=old.body,
            created_by=old.created_by,
            created_at=old.created_at,
        )
        for old in OldNote.objects.using(alias).order_by("pk").iterator()
        if old.tenant in tenants
    ]
    Note.objects.using(alias).bulk_create(notes, batch_size=500)


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('mcp_gateway', '0001_initial'),
        ('engines_app', '0001_initial'),
    ]

    run_before = [
        ('engines_app', '0002_delete_note'),
    ]

    operations = [
        migrations.CreateModel(
            name='Note',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('title', models.CharField(max_length=200, verbose_name='title')),
                ('body', models.TextField(blank=True, verbose_name='body')),
                ('created_by', models.CharField(blank=True, max_length=150, verbose_name='created by')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='created')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='demo_notes', to='mcp_gateway.tenant', verbose_name='tenant')),
            ],
            options={
                'verbose_name': 'note',
                'verbose_name_plural': 'notes',
                'ordering': ['tenant', 'id'],
            },
        ),
        migrations.RunPython(copy_notes, migrations.RunPython.noop),
    ]
